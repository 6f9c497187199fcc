// porta — eager op API: each call dispatches on its inputs' device.
#pragma once
#include <vector>

#include "porta/dispatch.hpp"

namespace porta::ops {

inline Tensor unary(std::string_view op, const Tensor& x, const Attributes& a = {}) {
  return call_op(op, {x}, a).at(0);
}
inline Tensor binary(std::string_view op, const Tensor& x, const Tensor& y) {
  return call_op(op, {x, y}).at(0);
}
inline Tensor add(const Tensor& a, const Tensor& b) { return binary("Add", a, b); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return binary("Sub", a, b); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return binary("Mul", a, b); }
inline Tensor div(const Tensor& a, const Tensor& b) { return binary("Div", a, b); }
inline Tensor matmul(const Tensor& a, const Tensor& b) { return binary("MatMul", a, b); }
inline Tensor relu(const Tensor& x) { return unary("Relu", x); }
inline Tensor exp(const Tensor& x) { return unary("Exp", x); }
inline Tensor tanh(const Tensor& x) { return unary("Tanh", x); }
inline Tensor sigmoid(const Tensor& x) { return unary("Sigmoid", x); }
inline Tensor softmax(const Tensor& x, int64_t axis = -1) {
  return unary("Softmax", x, {{"axis", axis}});
}
inline Tensor transpose(const Tensor& x, std::vector<int64_t> perm) {
  return unary("Transpose", x, {{"perm", std::move(perm)}});
}

}  // namespace porta::ops
