// ArgMax and ArgMin: i64 index of the largest (smallest) element along `axis`; the first
// one on ties, or the last with select_last_index=1. NaN counts as the extreme (PyTorch).
// An empty axis is a ShapeError.
#include <cmath>

#include "ops/common.hpp"
#include "ops/reduce_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {
namespace {

// Whether `v` replaces the current best `best` (NaN wins, ties go by select_last).
bool better(double v, double best, bool is_max, bool select_last) {
  if (std::isnan(best)) return select_last && std::isnan(v);
  if (std::isnan(v)) return true;
  if (v == best) return select_last;
  return is_max ? v > best : v < best;
}

void arg_reference(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  bool is_max = ctx.op->name == "ArgMax", last = ctx.attrs->get_int("select_last_index") != 0;
  int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), ctx.op->name);
  if (x.rank() == 0) {
    ctx.out(0).data<double>()[0] = 0;
    return;
  }
  int64_t outer = 1, n = x.shape()[axis], inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  check_reduce_nonempty(ReduceKind::max, x.shape(), {axis}, outer * inner, ctx.op->name);
  const double* src = x.data<double>();
  double* dst = ctx.out(0).data<double>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < n; ++k)
        if (better(src[(o * n + k) * inner + i], src[(o * n + best) * inner + i], is_max, last)) best = k;
      dst[o * inner + i] = static_cast<double>(best);
    }
}

std::vector<OpCase> arg_cases() {
  std::vector<OpCase> c;
  Attributes last{{"select_last_index", int64_t{1}}};
  // Integer inputs in [-2, 2] tie often, which exercises select_last_index.
  c.push_back({"axis0", {in({5, 4})}, {}, kFloats | kI64 | kI32});
  c.push_back({"axis1_flat", {in({3, 7, 2})}, {{"axis", int64_t{1}}, {"keepdims", int64_t{0}}}, kF32 | kI64});
  c.push_back({"negative_axis", {in({3, 4, 6})}, {{"axis", int64_t{-1}}}, kF32 | kF16});
  c.push_back({"ties_first", {in({4, 9}, -1, 1)}, {{"axis", int64_t{1}}}, kI32 | kI64});
  c.push_back({"ties_last", {in({4, 9}, -1, 1)}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}, kI32 | kI64});
  c.push_back({"select_last_f32", {in({6, 5})}, last, kF32});
  // Rows longer than a 256-wide workgroup, full of ties: the order of the combining tree must
  // not change which index wins.
  c.push_back({"long_row_ties", {in({3, 600}, -3, 3)}, {{"axis", int64_t{1}}}, kI32 | kI64});
  c.push_back({"long_row_ties_last", {in({3, 600}, -3, 3)}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}},
               kI32 | kI64});
  c.push_back({"small_ints", {in({4, 9}, 0, 3)}, {{"axis", int64_t{1}}}, kI8 | kU8});
  c.push_back({"small_ints_last", {in({4, 9}, 0, 3)}, {{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}},
               kI8 | kU8});
  c.push_back({"size1", {in({1})}, {}, kF32});
  c.push_back({"empty_kept", {in({0, 3})}, {{"axis", int64_t{1}}}, kF32});
  OpCase big{"4096x4096", {in({4096, 4096})}, {{"axis", int64_t{1}}}, kF32};
  big.perf = true;
  c.push_back(big);
  return c;
}

OpSchema arg_schema(std::string name) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = {"data"};
  s.outputs = {"reduced"};
  s.attrs = {attr_int("axis", 0), attr_int("keepdims", 1), attr_int("select_last_index", 0)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats | kI64 | kI32 | kI8 | kU8);
    const Shape& in = ctx.shape(0);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), static_cast<int64_t>(in.size()), ctx.op->name);
    std::vector<int64_t> axes;
    if (!in.empty()) axes.push_back(axis);
    ctx.set_output(0, reduce_shape(in, axes, ctx.attrs->get_int("keepdims") != 0), DType::i64);
  };
  s.reference = arg_reference;
  s.cases = arg_cases;
  s.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attributes&) {
    return static_cast<double>(shape_numel(in.at(0)));
  };
  return s;
}

}  // namespace

PORTA_REGISTER_OP(ArgMax) { return arg_schema("ArgMax"); }
PORTA_REGISTER_OP(ArgMin) { return arg_schema("ArgMin"); }

}  // namespace porta::opdef
