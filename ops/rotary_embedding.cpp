// RotaryEmbedding (ai.porta, version 1): rotates pairs of X's last axis by per-position angles.
// X [B,H,S,D] with D even; Cos and Sin [S, D/2] (cos and sin of the angles), same float dtype.
// interleaved = 0 (default): the pairs are (X[..., i], X[..., i + D/2]) (rotate the halves):
//   Y = concat(x1 * cos - x2 * sin, x2 * cos + x1 * sin),  x1 = X[..., :D/2], x2 = X[..., D/2:]
// interleaved = 1: the pairs are (X[..., 2i], X[..., 2i+1]), rotated the same way.
// Y: X's shape and dtype.
#include "ops/custom_common.hpp"

namespace porta::opdef {
namespace {

bool interleaved_of(const Attributes& a) {
  int64_t v = a.get_int("interleaved");
  if (v != 0 && v != 1) throw InvalidModel(str("[RotaryEmbedding] interleaved should be 0 or 1, got ", v));
  return v == 1;
}

ValueId slice_last(GraphBuilder& b, ValueId x, int64_t axis, int64_t start, int64_t end) {
  auto i64 = [&](int64_t v) { return b.constant(Tensor::from_values({static_cast<double>(v)}, {1}, DType::i64)); };
  return b.add1("Slice", {x, i64(start), i64(end), i64(axis)});
}

ValueId reshape(GraphBuilder& b, ValueId x, const Shape& shape) {
  std::vector<double> dims(shape.begin(), shape.end());
  return b.add1("Reshape", {x, b.constant(Tensor::from_values(dims, {static_cast<int64_t>(dims.size())}, DType::i64))});
}

}  // namespace

PORTA_REGISTER_OP(RotaryEmbedding) {
  OpSchema s;
  s.name = "RotaryEmbedding";
  s.domain = kPortaDomain;
  s.inputs = {"X", "Cos", "Sin"};
  s.outputs = {"Y"};
  s.attrs = {attr_int("interleaved", 0)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "X, Cos and Sin");
    require_rank(ctx, 0, 4, "X", "B,H,S,D");
    const Shape& x = ctx.shape(0);
    if (x[3] % 2 != 0)
      throw ShapeError(str("[RotaryEmbedding] X's last axis D should be even (pairs are rotated), got X ", shape_str(x)));
    Shape table{x[2], x[3] / 2};
    for (size_t i : {size_t{1}, size_t{2}})
      if (ctx.shape(i) != table)
        throw ShapeError(str("[RotaryEmbedding] ", i == 1 ? "Cos" : "Sin", " should be S x D/2 = ", shape_str(table),
                             " (X ", shape_str(x), "), got ", shape_str(ctx.shape(i))));
    interleaved_of(*ctx.attrs);
    ctx.set_output(0, x, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Shape& x = ctx.in(0).shape();
    int64_t rows = x[0] * x[1], S = x[2], D = x[3], half = D / 2;
    bool inter = interleaved_of(*ctx.attrs);
    const double *px = ctx.in(0).data<double>(), *cs = ctx.in(1).data<double>(), *sn = ctx.in(2).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t p = 0; p < S; ++p) {
        int64_t base = (r * S + p) * D;
        for (int64_t i = 0; i < half; ++i) {
          int64_t a = inter ? base + 2 * i : base + i, b = inter ? base + 2 * i + 1 : base + half + i;
          double c = cs[p * half + i], s = sn[p * half + i];
          y[a] = px[a] * c - px[b] * s;
          y[b] = px[b] * c + px[a] * s;
        }
      }
  };
  // Halves: Slice, Mul, Sub/Add, Concat. Interleaved: the same on X reshaped to
  // [B,H,S,D/2,2] (pairs on the new last axis) with Cos/Sin reshaped to [S,D/2,1].
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    ValueId x = in[0], cos = in[1], sin = in[2];
    Shape xs = b.shape(x);
    int64_t half = xs[3] / 2, axis = 3;
    bool inter = interleaved_of(a);
    if (inter) {
      x = reshape(b, x, {xs[0], xs[1], xs[2], half, 2});
      cos = reshape(b, cos, {xs[2], half, 1});
      sin = reshape(b, sin, {xs[2], half, 1});
      axis = 4;
    }
    ValueId x1 = inter ? slice_last(b, x, axis, 0, 1) : slice_last(b, x, axis, 0, half);
    ValueId x2 = inter ? slice_last(b, x, axis, 1, 2) : slice_last(b, x, axis, half, xs[3]);
    ValueId y1 = b.add1("Sub", {b.add1("Mul", {x1, cos}), b.add1("Mul", {x2, sin})});
    ValueId y2 = b.add1("Add", {b.add1("Mul", {x2, cos}), b.add1("Mul", {x1, sin})});
    ValueId y = b.add1("Concat", {y1, y2}, {{"axis", axis}});
    if (inter) y = reshape(b, y, xs);
    return std::vector<ValueId>{y};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    Attributes inter{{"interleaved", int64_t{1}}};
    c.push_back({"halves", {in({2, 3, 5, 8}), in({5, 4}), in({5, 4})}, {}, kF32 | kF64});
    c.push_back({"interleaved", {in({2, 3, 5, 8}), in({5, 4}), in({5, 4})}, inter, kF32 | kF64});
    c.push_back({"halves_odd", {in({1, 3, 7, 26}), in({7, 13}), in({7, 13})}, {}, kF32});
    c.push_back({"interleaved_odd", {in({3, 1, 9, 34}), in({9, 17}), in({9, 17})}, inter, kF32});
    c.push_back({"d2", {in({1, 2, 3, 2}), in({3, 1}), in({3, 1})}, inter, kF32});
    c.push_back({"head_dim_128", {in({1, 4, 33, 128}), in({33, 64}), in({33, 64})}, {}, kF32});
    c.push_back({"one_position", {in({2, 2, 1, 6}), in({1, 3}), in({1, 3})}, {}, kF32});
    c.push_back({"empty_batch", {in({0, 2, 4, 8}), in({4, 4}), in({4, 4})}, inter, kF32});
    OpCase big{"B1_H32_S1024_D128", {in({1, 32, 1024, 128}), in({1024, 64}), in({1024, 64})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(3);
  return s;
}

}  // namespace porta::opdef
