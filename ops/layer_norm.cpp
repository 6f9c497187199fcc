// LayerNormalization (opset 17): X is normalized over axes [axis, rank) with the biased
// variance; Scale and the optional B broadcast to X.shape[axis:]:
//   Y = (X - Mean) * InvStdDev * Scale + B,  InvStdDev = 1 / sqrt(Var + epsilon).
// The optional outputs Mean and InvStdDev have shape X.shape[:axis] + [1] * (rank - axis) and
// the stash type (f32; stash_type must be 1).
#include <cmath>

#include "ops/common.hpp"

namespace porta::opdef {
namespace {

Shape normalized_shape(const Shape& x, int64_t axis) { return Shape(x.begin() + axis, x.end()); }

}  // namespace

PORTA_REGISTER_OP(LayerNormalization) {
  OpSchema s;
  s.name = "LayerNormalization";
  s.inputs = {"X", "Scale", "B?"};
  s.outputs = {"Y", "Mean?", "InvStdDev?"};
  s.attrs = {attr_int("axis", -1), attr_float("epsilon", 1e-5), attr_int("stash_type", 1)};
  s.infer = [](InferContext& ctx) {
    require_same_dtype(ctx);
    require_dtype(ctx, 0, kFloats);
    if (ctx.attrs->get_int("stash_type") != 1)
      throw Unsupported(str("[LayerNormalization] stash_type must be 1 (float), got ",
                            ctx.attrs->get_int("stash_type")));
    const Shape& x = ctx.shape(0);
    int64_t rank = static_cast<int64_t>(x.size());
    if (rank == 0) throw ShapeError("[LayerNormalization] X must have rank >= 1, got a scalar");
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), rank, "LayerNormalization");
    Shape norm = normalized_shape(x, axis);
    for (size_t i = 1; i < 3; ++i) {
      if (!ctx.has_input(i)) continue;
      const Shape& p = ctx.shape(i);
      if (p.size() > norm.size() || broadcast_shapes(norm, p, "LayerNormalization") != norm)
        throw ShapeError(str("[LayerNormalization] ", i == 1 ? "Scale" : "B", " must broadcast to ",
                             shape_str(norm), " (X ", shape_str(x), " from axis ", axis, "), got ",
                             shape_str(p)));
    }
    ctx.set_output(0, x, ctx.dtype(0));
    Shape stat(x.begin(), x.begin() + axis);
    stat.resize(x.size(), 1);
    ctx.set_output(1, stat, DType::f32);
    ctx.set_output(2, stat, DType::f32);
  };
  s.reference = [](KernelContext& ctx) {
    const Shape& x = ctx.in(0).shape();
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), static_cast<int64_t>(x.size()), "");
    Shape norm = normalized_shape(x, axis);
    int64_t inner = shape_numel(norm), outer = inner == 0 ? 0 : ctx.in(0).numel() / inner;
    double eps = ctx.attrs->get_float("epsilon");
    Tensor scale = ctx.in(1).expand(norm).contiguous();
    Tensor bias = ctx.has_input(2) ? ctx.in(2).expand(norm).contiguous() : Tensor::zeros(norm, DType::f64);
    const double *px = ctx.in(0).data<double>(), *sc = scale.data<double>(), *b = bias.data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t o = 0; o < outer; ++o) {
      const double* row = px + o * inner;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += row[j];
      mean /= static_cast<double>(inner);
      for (int64_t j = 0; j < inner; ++j) var += (row[j] - mean) * (row[j] - mean);
      var /= static_cast<double>(inner);
      double inv = 1.0 / std::sqrt(var + eps);
      for (int64_t j = 0; j < inner; ++j) y[o * inner + j] = (row[j] - mean) * inv * sc[j] + b[j];
      if (ctx.outputs.size() > 1 && ctx.out(1).defined()) ctx.out(1).data<double>()[o] = mean;
      if (ctx.outputs.size() > 2 && ctx.out(2).defined()) ctx.out(2).data<double>()[o] = inv;
    }
    // Statistics over an empty extent are 0/0: NaN, as ReduceMean of nothing (the rows of Y are
    // empty then, and the Mean/InvStdDev outputs still have one element per outer index).
    if (inner == 0)
      for (size_t k = 1; k < 3 && k < ctx.outputs.size(); ++k)
        if (ctx.out(k).defined())
          for (int64_t i = 0; i < ctx.out(k).numel(); ++i) ctx.out(k).data<double>()[i] = std::nan("");
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"last", {in({5, 17}), in({17}), in({17})}, {}, kF32 | kF64});
    c.push_back({"no_bias", {in({3, 8}), in({8}), in_absent()}, {}, kF32 | kF64});
    c.push_back({"axis1", {in({2, 3, 5}), in({3, 5}), in({5})}, {{"axis", int64_t{1}}}, kF32 | kF64});
    c.push_back({"axis0", {in({4, 3}), in({4, 3}), in({1})}, {{"axis", int64_t{0}}, {"epsilon", 1e-3}}, kF32});
    c.push_back({"scale_broadcast", {in({2, 3, 6}), in({1, 6}), in({6})}, {{"axis", int64_t{-2}}}, kF32});
    OpCase stats{"mean_invstd", {in({4, 9}), in({9}), in({9})}, {}, kF32 | kF64};
    stats.num_outputs = 3;
    c.push_back(stats);
    OpCase stats2{"mean_invstd_3d", {in({2, 3, 7}), in({7}), in_absent()}, {}, kF32};
    stats2.num_outputs = 3;
    c.push_back(stats2);
    c.push_back({"length1", {in({6, 1}), in({1}), in({1})}, {}, kF32});
    c.push_back({"empty_outer", {in({0, 4}), in({4}), in({4})}, {}, kF32});
    // Normalized over nothing: Y is empty, Mean and InvStdDev are NaN (found by porta_fuzz_ops).
    OpCase empty_stats{"empty_extent_stats", {in({3, 0}), in({3, 0}), in({3, 0})}, {{"axis", int64_t{0}}}, kF32};
    empty_stats.num_outputs = 3;
    c.push_back(empty_stats);
    OpCase big{"4096x4096", {in({4096, 4096}), in({4096}), in({4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(8);
  return s;
}

}  // namespace porta::opdef
