// plugins/torch — torch formulas (ONNX semantics, written with differentiable torch ops) of
// the ops composites are made of, for ops that have no composite of their own. They are only
// the gradient path (autograd.cpp): forward results always come from porta's kernels.
#include <map>

#include "ops_call.hpp"

namespace porta_torch {
namespace {

using Tensors = std::vector<at::Tensor>;

std::vector<int64_t> int_values(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// Axes from input `i` when given, else from the attribute "axes" (older opsets), else none.
std::vector<int64_t> axes_of(const Tensors& in, size_t i, const porta::Attributes& a) {
  if (in.size() > i && in[i].defined()) return int_values(in[i]);
  return a.get_ints("axes", {});
}

#define UNARY(Name, expr)                                                      \
  Tensors Name(const Tensors& in, const porta::Attributes& a, int) {          \
    (void)a;                                                                   \
    const at::Tensor& x = in.at(0);                                            \
    return {expr};                                                             \
  }
UNARY(neg, -x)
UNARY(abs, x.abs())
UNARY(exp, x.exp())
UNARY(log, x.log())
UNARY(sqrt, x.sqrt())
UNARY(reciprocal, x.reciprocal())
UNARY(tanh, x.tanh())
UNARY(sigmoid, x.sigmoid())
UNARY(relu, x.relu())
UNARY(erf, x.erf())
UNARY(sin, x.sin())
UNARY(cos, x.cos())
UNARY(identity, x)
UNARY(leaky_relu, at::leaky_relu(x, a.get_float("alpha")))
UNARY(gelu, at::gelu(x, a.get_string("approximate")))
UNARY(softmax, at::softmax(x, a.get_int("axis")))
#undef UNARY

#define BINARY(Name, expr)                                              \
  Tensors Name(const Tensors& in, const porta::Attributes&, int) {     \
    const at::Tensor &x = in.at(0), &y = in.at(1);                      \
    return {expr};                                                      \
  }
BINARY(add, x + y)
BINARY(sub, x - y)
BINARY(mul, x * y)
BINARY(div, at::isFloatingType(x.scalar_type()) ? x / y : at::div(x, y, "trunc"))
BINARY(pow, at::pow(x, y))
BINARY(matmul, at::matmul(x, y))
#undef BINARY

Tensors where(const Tensors& in, const porta::Attributes&, int) { return {at::where(in.at(0), in.at(1), in.at(2))}; }

Tensors fold(const Tensors& in, at::Tensor (*f)(const at::Tensor&, const at::Tensor&)) {
  at::Tensor r = in.at(0);
  for (size_t i = 1; i < in.size(); ++i) r = f(r, in[i]);
  return {r};
}
Tensors max(const Tensors& in, const porta::Attributes&, int) { return fold(in, at::maximum); }
Tensors min(const Tensors& in, const porta::Attributes&, int) { return fold(in, at::minimum); }
Tensors sum(const Tensors& in, const porta::Attributes&, int) {
  return fold(in, [](const at::Tensor& x, const at::Tensor& y) { return x + y; });
}

Tensors reshape(const Tensors& in, const porta::Attributes& a, int) {
  const at::Tensor& x = in.at(0);
  std::vector<int64_t> shape = int_values(in.at(1));
  if (a.get_int("allowzero", 0) == 0)
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] == 0) shape[d] = x.size(static_cast<int64_t>(d));
  return {x.reshape(shape)};
}

Tensors transpose(const Tensors& in, const porta::Attributes& a, int) {
  const at::Tensor& x = in.at(0);
  std::vector<int64_t> perm = a.get_ints("perm", {});
  if (perm.empty())
    for (int64_t d = x.dim() - 1; d >= 0; --d) perm.push_back(d);
  return {x.permute(perm)};
}

Tensors reduce(const Tensors& in, const porta::Attributes& a, bool mean) {
  const at::Tensor& x = in.at(0);
  std::vector<int64_t> axes = axes_of(in, 1, a);
  bool keep = a.get_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (a.get_int("noop_with_empty_axes", 0) != 0) return {x};
    for (int64_t d = 0; d < x.dim(); ++d) axes.push_back(d);
  }
  return {mean ? x.mean(axes, keep) : x.sum(axes, keep)};
}
Tensors reduce_mean(const Tensors& in, const porta::Attributes& a, int) { return reduce(in, a, true); }
Tensors reduce_sum(const Tensors& in, const porta::Attributes& a, int) { return reduce(in, a, false); }

Tensors cast(const Tensors& in, const porta::Attributes& a, int) {
  // ONNX TensorProto data types.
  static const std::map<int64_t, at::ScalarType> types{{1, at::kFloat},  {2, at::kByte},  {3, at::kChar},
                                                       {6, at::kInt},    {7, at::kLong},  {9, at::kBool},
                                                       {10, at::kHalf},  {11, at::kDouble}, {16, at::kBFloat16}};
  int64_t to = a.get_int("to");
  auto it = types.find(to);
  TORCH_CHECK(it != types.end(), "[Cast] ONNX data type ", to, " has no torch dtype porta uses");
  return {in.at(0).to(it->second)};
}

Tensors concat(const Tensors& in, const porta::Attributes& a, int) { return {at::cat(in, a.get_int("axis"))}; }

Tensors expand(const Tensors& in, const porta::Attributes&, int) {
  const at::Tensor& x = in.at(0);
  std::vector<int64_t> shape = int_values(in.at(1));
  return {x.expand(at::infer_size(x.sizes(), shape))};
}

Tensors unsqueeze(const Tensors& in, const porta::Attributes& a, int) {
  at::Tensor x = in.at(0);
  std::vector<int64_t> axes = axes_of(in, 1, a);
  int64_t rank = x.dim() + static_cast<int64_t>(axes.size());
  for (int64_t& d : axes) d = d < 0 ? d + rank : d;
  std::sort(axes.begin(), axes.end());
  for (int64_t d : axes) x = x.unsqueeze(d);
  return {x};
}

Tensors squeeze(const Tensors& in, const porta::Attributes& a, int) {
  at::Tensor x = in.at(0);
  std::vector<int64_t> axes = axes_of(in, 1, a);
  if (axes.empty()) return {x.squeeze()};
  for (int64_t& d : axes) d = d < 0 ? d + x.dim() : d;
  std::sort(axes.rbegin(), axes.rend());
  for (int64_t d : axes) x = x.squeeze(d);
  return {x};
}

Tensors slice(const Tensors& in, const porta::Attributes&, int) {
  at::Tensor x = in.at(0);
  std::vector<int64_t> starts = int_values(in.at(1)), ends = int_values(in.at(2));
  std::vector<int64_t> axes, steps;
  if (in.size() > 3 && in[3].defined()) axes = int_values(in[3]);
  else
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  if (in.size() > 4 && in[4].defined()) steps = int_values(in[4]);
  else steps.assign(starts.size(), 1);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = axes[k] < 0 ? axes[k] + x.dim() : axes[k];
    int64_t n = x.size(axis), step = steps[k];
    int64_t start = starts[k] < 0 ? starts[k] + n : starts[k];
    int64_t end = ends[k] < 0 ? ends[k] + n : ends[k];
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, n);
      end = std::clamp<int64_t>(end, 0, n);
      x = x.slice(axis, start, std::max(start, end), step);
    } else {
      start = std::clamp<int64_t>(start, 0, n - 1);
      end = std::clamp<int64_t>(end, -1, n - 1);
      at::Tensor index = at::arange(start, end, step, x.options().dtype(at::kLong));
      x = x.index_select(axis, index);
    }
  }
  return {x};
}

const std::map<std::string, Formula>& formulas() {
  static const std::map<std::string, Formula> table{
      {"Abs", abs},         {"Add", add},          {"Cast", cast},           {"Concat", concat},
      {"Cos", cos},         {"Div", div},          {"Erf", erf},             {"Exp", exp},
      {"Expand", expand},   {"Gelu", gelu},        {"Identity", identity},   {"LeakyRelu", leaky_relu},
      {"Log", log},         {"MatMul", matmul},    {"Max", max},             {"Min", min},
      {"Mul", mul},         {"Neg", neg},          {"Pow", pow},             {"Reciprocal", reciprocal},
      {"ReduceMean", reduce_mean}, {"ReduceSum", reduce_sum}, {"Relu", relu}, {"Reshape", reshape},
      {"Sigmoid", sigmoid}, {"Sin", sin},          {"Slice", slice},         {"Softmax", softmax},
      {"Sqrt", sqrt},       {"Squeeze", squeeze},  {"Sub", sub},             {"Sum", sum},
      {"Tanh", tanh},       {"Transpose", transpose}, {"Unsqueeze", unsqueeze}, {"Where", where}};
  return table;
}

}  // namespace

Formula find_formula(const std::string& qualified_name) {
  auto it = formulas().find(qualified_name);
  return it == formulas().end() ? nullptr : it->second;
}

}  // namespace porta_torch
