// BiasGelu (ai.porta, version 1): Y = gelu(X + Bias), Bias broadcast along the last axis.
// X: float tensor of rank >= 1, last axis length C. Bias: 1-D of length C, same dtype.
// Gelu (ONNX, opset 20): Y = gelu(X), elementwise, any rank. Sessions also rewrite PyTorch's
// opset <= 17 export of GELU (Div, Erf, Add, Mul, Mul) into it (runtime/gelu_fusion.cpp).
// approximate (string): "none" (default) or "tanh", PyTorch's two gelu formulas:
//   none: 0.5 * h * (1 + erf(h / sqrt(2)))
//   tanh: 0.5 * h * (1 + tanh(sqrt(2 / pi) * (h + 0.044715 * h^3)))
#include <cmath>
#include <numbers>

#include "ops/custom_common.hpp"
#include "ops/fused_activation.hpp"

namespace porta::opdef {
namespace {

// Returns true for "tanh", false for "none"; anything else is an invalid model.
bool tanh_form(const Attributes& a, const char* op = "BiasGelu") {
  const std::string& mode = a.get_string("approximate");
  if (mode != "none" && mode != "tanh")
    throw InvalidModel(str("[", op, "] approximate should be 'none' or 'tanh', got '", mode, "'"));
  return mode == "tanh";
}

constexpr double kTanhCoeff = 0.044715;
const double kSqrt2OverPi = std::sqrt(2.0 / std::numbers::pi);

double gelu(double h, bool tanh_mode) { return tanh_mode ? act::gelu_tanh(h) : act::gelu_erf(h); }

// The gelu formula on h from Mul/Add and Erf (none) or Tanh (tanh), as PyTorch exports it.
ValueId gelu_graph(GraphBuilder& b, ValueId h, bool tanh_mode) {
  DType dt = b.dtype(h);
  auto k = [&](double v) { return scalar_constant(b, v, dt); };
  ValueId inner;
  if (tanh_mode) {
    ValueId cube = b.add1("Mul", {b.add1("Mul", {h, h}), h});
    ValueId poly = b.add1("Add", {h, b.add1("Mul", {cube, k(kTanhCoeff)})});
    inner = b.add1("Tanh", {b.add1("Mul", {poly, k(kSqrt2OverPi)})});
  } else {
    inner = b.add1("Erf", {b.add1("Mul", {h, k(1.0 / std::numbers::sqrt2)})});
  }
  ValueId one_plus = b.add1("Add", {inner, k(1.0)});
  return b.add1("Mul", {b.add1("Mul", {h, one_plus}), k(0.5)});
}

}  // namespace

PORTA_REGISTER_OP(BiasGelu) {
  OpSchema s;
  s.name = "BiasGelu";
  s.domain = kPortaDomain;
  s.inputs = {"X", "Bias"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("approximate", "none")};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "X and Bias");
    const Shape& x = ctx.shape(0);
    if (x.empty()) throw ShapeError("[BiasGelu] X should have rank >= 1 (Bias runs along its last axis), got a scalar");
    require_last_axis_vector(ctx, 1, x.back(), "Bias");
    tanh_form(*ctx.attrs);
    ctx.set_output(0, x, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    bool tanh_mode = tanh_form(*ctx.attrs);
    int64_t c = x.shape().back();
    const double *px = x.data<double>(), *bias = ctx.in(1).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < x.numel(); ++i) y[i] = gelu(px[i] + bias[i % c], tanh_mode);
  };
  // Add, then the gelu formula.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    return std::vector<ValueId>{gelu_graph(b, b.add1("Add", {in[0], in[1]}), tanh_form(a))};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    Attributes tanh_attr{{"approximate", std::string("tanh")}};
    c.push_back({"erf_odd", {in({3, 17}, -4, 4), in({17})}, {}, kF32 | kF64});
    c.push_back({"tanh_odd", {in({3, 17}, -4, 4), in({17})}, tanh_attr, kF32 | kF64});
    c.push_back({"erf_rank3", {in({2, 3, 65}, -6, 6), in({65})}, {}, kF32});
    c.push_back({"tanh_rank3", {in({2, 3, 65}, -6, 6), in({65})}, tanh_attr, kF32});
    // One element: a relative check of a single value, so kept where 1 + erf does not cancel
    // (gelu's far negative tail is tiny and carries float rounding of h, on every device).
    c.push_back({"one", {in({1}, 0.25, 2), in({1}, 0.25, 2)}, {}, kF32});
    c.push_back({"tanh_vector", {in({1001}, -8, 8), in({1001})}, tanh_attr, kF32});
    c.push_back({"empty", {in({0, 5}), in({5})}, {}, kF32});
    c.push_back({"empty_axis", {in({4, 0}), in({0})}, tanh_attr, kF32});
    OpCase big{"4096x4096", {in({4096, 4096}), in({4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    OpCase big_tanh{"tanh_4096x4096", {in({4096, 4096}), in({4096})}, tanh_attr, kF32};
    big_tanh.perf = true;
    c.push_back(big_tanh);
    return c;
  };
  s.flops = flops_per_output_element(8);
  return s;
}

PORTA_REGISTER_OP(Gelu) {
  OpSchema s;
  s.name = "Gelu";
  s.inputs = {"X"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("approximate", "none")};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    tanh_form(*ctx.attrs, "Gelu");
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    bool tanh_mode = tanh_form(*ctx.attrs, "Gelu");
    const double* px = x.data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < x.numel(); ++i) y[i] = gelu(px[i], tanh_mode);
  };
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    return std::vector<ValueId>{gelu_graph(b, in[0], tanh_form(a, "Gelu"))};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    Attributes tanh_attr{{"approximate", std::string("tanh")}};
    c.push_back({"erf_odd", {in({3, 17}, -6, 6)}, {}, kF32 | kF64});
    c.push_back({"tanh_odd", {in({3, 17}, -6, 6)}, tanh_attr, kF32 | kF64});
    c.push_back({"erf_rank4", {in({2, 5, 7, 3}, -4, 4)}, {}, kF32});
    c.push_back({"tanh_vector", {in({1001}, -8, 8)}, tanh_attr, kF32});
    // A scalar (the relative check of one value: kept where 1 + erf does not cancel).
    c.push_back({"scalar", {in({}, 0.25, 2)}, {}, kF32});
    c.push_back({"empty", {in({0, 5})}, {}, kF32});
    OpCase big{"4096x4096", {in({4096, 4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(7);
  return s;
}

}  // namespace porta::opdef
