// RmsNormMatMul (ai.porta, version 1): an RMS normalization over the last axis and the product
// that reads it, as one op:
//   Y = (X / sqrt(mean(X^2 over the last axis) + epsilon)) . W + B
// X: [..., K] (rank >= 1, any float dtype). W: K x N. B: [N], optional. All of X's dtype.
// Y: [..., N]. The norm's Scale is folded into W's rows (W[k, :] = Scale[k] * W_model[k, :]):
// the graph rewrite of runtime/rms_norm_matmul_fusion.cpp makes the op from an RmsNorm read by
// projections alone (LLaMA's attention and output projections after their norms), so that the
// product's kernel sums the squares of the rows it streams anyway and scales its results,
// instead of a dispatch that writes the normalized rows first.
#include <cmath>

#include "ops/custom_common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(RmsNormMatMul) {
  OpSchema s;
  s.name = "RmsNormMatMul";
  s.domain = kPortaDomain;
  s.inputs = {"X", "W", "B?"};
  s.outputs = {"Y"};
  s.attrs = {attr_float("epsilon", 1e-6)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "X, W and B");
    const Shape& x = ctx.shape(0);
    if (x.empty()) throw ShapeError("[RmsNormMatMul] X should have rank >= 1 ([..., K]), got a scalar");
    const Shape& w = ctx.shape(1);
    if (w.size() != 2 || w[0] != x.back())
      throw ShapeError(str("[RmsNormMatMul] W should be K x N with K = ", x.back(), " (X ", shape_str(x), "), got ",
                           shape_str(w)));
    if (ctx.has_input(2)) require_last_axis_vector(ctx, 2, w[1], "B");
    if (!(ctx.attrs->get_float("epsilon") >= 0))
      throw InvalidModel(str("[RmsNormMatMul] epsilon should be >= 0, got ", ctx.attrs->get_float("epsilon")));
    Shape y = x;
    y.back() = w[1];
    ctx.set_output(0, y, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const int64_t K = x.shape().back(), N = ctx.in(1).dim(1);
    const int64_t M = K == 0 ? shape_numel(ctx.out(0).shape()) / std::max<int64_t>(N, 1) : x.numel() / K;
    const double eps = ctx.attrs->get_float("epsilon");
    const double *px = x.data<double>(), *w = ctx.in(1).data<double>();
    const double* b = ctx.has_input(2) ? ctx.in(2).data<double>() : nullptr;
    double* y = ctx.out(0).data<double>();
    for (int64_t m = 0; m < M; ++m) {
      double sum_sq = 0;
      for (int64_t k = 0; k < K; ++k) sum_sq += px[m * K + k] * px[m * K + k];
      // A row of no elements normalizes to nothing: its product is the bias alone.
      const double inv_rms = K ? 1.0 / std::sqrt(sum_sq / static_cast<double>(K) + eps) : 0.0;
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += px[m * K + k] * w[k * N + n];
        y[m * N + n] = acc * inv_rms + (b ? b[n] : 0.0);
      }
    }
  };
  // Mul, ReduceMean (keepdims), Add epsilon, Sqrt, Div, MatMul (+ Add): RmsNorm's decomposition
  // without its Scale (folded into W), then the product.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    ValueId x = in[0];
    ValueId sq = b.add1("Mul", {x, x});
    ValueId mean = b.add1("ReduceMean", {sq}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
    ValueId var = b.add1("Add", {mean, scalar_constant(b, a.get_float("epsilon"), b.dtype(x))});
    ValueId normed = b.add1("Div", {x, b.add1("Sqrt", {var})});
    ValueId y = b.add1("MatMul", {normed, in[1]});
    if (present(in, 2)) y = b.add1("Add", {y, in[2]});
    return std::vector<ValueId>{y};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    // LLaMA's attention projection: 2 x 16 tokens, width 64, q, k and v packed (192).
    c.push_back({"qkv", {in({2, 16, 64}), in({64, 192})}, {}, kF32});
    // A bias; rows past the kernel's tiles (37); outputs no multiple of 4 (element stores).
    c.push_back({"bias_odd_rows", {in({37, 48}), in({48, 24}), in({24})}, {{"epsilon", 1e-3}}, kF32});
    c.push_back({"narrow_outputs", {in({20, 16}), in({16, 10}), in({10})}, {}, kF32});
    // K past 512 (the kernel's 32-row tiles), 12 outputs (a half-filled block of 8 columns).
    c.push_back({"long_rows", {in({2, 20, 520}), in({520, 12})}, {}, kF32});
    // K no multiple of 4 (the texel kernel declines); a single row; a vector.
    c.push_back({"odd_k", {in({12, 13}), in({13, 8})}, {}, kF32});
    c.push_back({"one_row", {in({1, 1, 64}), in({64, 96})}, {}, kF32});
    c.push_back({"vector", {in({32}), in({32, 16})}, {{"epsilon", 0.5}}, kF32});
    // No rows; no outputs; rows of no elements (the bias alone).
    c.push_back({"no_rows", {in({0, 8}), in({8, 4})}, {}, kF32});
    c.push_back({"no_outputs", {in({3, 8}), in({8, 0})}, {}, kF32});
    c.push_back({"empty_rows", {in({3, 0}), in({0, 4}), in({4})}, {}, kF32});
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>& outs, const Attributes&) {
    const double k = ins[0].empty() ? 0.0 : static_cast<double>(ins[0].back());
    return static_cast<double>(shape_numel(outs[0])) * 2.0 * k + static_cast<double>(shape_numel(ins[0])) * 2.0;
  };
  return s;
}

}  // namespace porta::opdef
