// RmsNorm (ai.porta, version 1): root-mean-square normalization over the last axis.
//   Y = X / sqrt(mean(X^2 over the last axis) + epsilon) * Scale
// X: any float tensor of rank >= 1, last axis length D. Scale: 1-D of length D, same dtype.
// Y: X's shape and dtype. epsilon (float, default 1e-6) is added inside the square root, as in
// the usual LLaMA / T5 definition. A last axis of length 0 gives an empty Y.
#include <cmath>

#include "ops/custom_common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(RmsNorm) {
  OpSchema s;
  s.name = "RmsNorm";
  s.domain = kPortaDomain;
  s.inputs = {"X", "Scale"};
  s.outputs = {"Y"};
  s.attrs = {attr_float("epsilon", 1e-6)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "X and Scale");
    const Shape& x = ctx.shape(0);
    if (x.empty()) throw ShapeError("[RmsNorm] X should have rank >= 1 (normalized over its last axis), got a scalar");
    require_last_axis_vector(ctx, 1, x.back(), "Scale");
    if (ctx.attrs->get_float("epsilon") < 0)
      throw InvalidModel(str("[RmsNorm] epsilon should be >= 0, got ", ctx.attrs->get_float("epsilon")));
    ctx.set_output(0, x, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    int64_t d = x.shape().back(), rows = d == 0 ? 0 : x.numel() / d;
    double eps = ctx.attrs->get_float("epsilon");
    const double *px = x.data<double>(), *scale = ctx.in(1).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t r = 0; r < rows; ++r) {
      const double* row = px + r * d;
      double sum_sq = 0;
      for (int64_t j = 0; j < d; ++j) sum_sq += row[j] * row[j];
      double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(d) + eps);
      for (int64_t j = 0; j < d; ++j) y[r * d + j] = row[j] * inv_rms * scale[j];
    }
  };
  // Mul, ReduceMean (keepdims), Add epsilon, Sqrt, Div, Mul by Scale.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    ValueId x = in[0], scale = in[1];
    DType dt = b.dtype(x);
    ValueId sq = b.add1("Mul", {x, x});
    ValueId mean = b.add1("ReduceMean", {sq}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
    ValueId var = b.add1("Add", {mean, scalar_constant(b, a.get_float("epsilon"), dt)});
    ValueId rms = b.add1("Sqrt", {var});
    ValueId normed = b.add1("Div", {x, rms});
    return std::vector<ValueId>{b.add1("Mul", {normed, scale})};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"odd", {in({3, 17}), in({17})}, {}, kF32 | kF64});
    c.push_back({"rank3", {in({2, 5, 33}), in({33})}, {{"epsilon", 1e-3}}, kF32 | kF64});
    c.push_back({"wide_odd", {in({4, 1031}), in({1031})}, {}, kF32});
    c.push_back({"one", {in({1}), in({1})}, {}, kF32});
    c.push_back({"row_of_1", {in({7, 1}), in({1})}, {{"epsilon", 0.5}}, kF32});
    c.push_back({"vector", {in({129}), in({129})}, {}, kF32 | kF64});
    c.push_back({"empty_rows", {in({0, 8}), in({8})}, {}, kF32});
    c.push_back({"empty_axis", {in({3, 0}), in({0})}, {}, kF32});
    OpCase big{"4096x4096", {in({4096, 4096}), in({4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(4);
  return s;
}

}  // namespace porta::opdef
