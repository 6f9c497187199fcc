// ReduceSum, ReduceMean, ReduceMax, ReduceMin. `axes` comes from the optional input (ReduceSum
// since opset 13, all four since opset 18) or, when that is absent, from the attribute
// (opsets 13-17). No axes: reduce everything, or nothing with noop_with_empty_axes=1.
// Integer ReduceMean truncates toward zero (C division of the int64 sum). Max/Min over an
// empty axis is a ShapeError (as in PyTorch); Sum over one is 0 and float Mean NaN.
#include <cmath>
#include <limits>

#include "ops/common.hpp"
#include "ops/reduce_util.hpp"
#include "ops/reference_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {

ReduceKind reduce_kind(std::string_view op) {
  if (op == "ReduceSum") return ReduceKind::sum;
  if (op == "ReduceMean") return ReduceKind::mean;
  if (op == "ReduceMax") return ReduceKind::max;
  return ReduceKind::min;
}

template <typename Ctx>
static std::vector<int64_t> axes_of(const Ctx& ctx, const Shape& in) {
  std::vector<int64_t> axes = ctx.has_input(1) ? optional_ints(ctx, 1) : ctx.attrs->get_ints("axes", {});
  return reduce_axes(in, axes, ctx.attrs->get_int("noop_with_empty_axes") != 0, ctx.op->name);
}

std::vector<int64_t> reduce_axes_of(const KernelContext& ctx) { return axes_of(ctx, ctx.in(0).shape()); }

static void reduce_reference(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &y = ctx.out(0);
  ReduceKind kind = reduce_kind(ctx.op->name);
  std::vector<int64_t> axes = reduce_axes_of(ctx);
  Shape kept = reduce_shape(x.shape(), axes, true);
  check_reduce_nonempty(kind, x.shape(), axes, shape_numel(kept), ctx.op->name);
  std::vector<double> acc(static_cast<size_t>(shape_numel(kept)), 0.0);
  std::vector<int64_t> count(acc.size(), 0);
  const double* src = x.data<double>();
  for_each_index(x.shape(), [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> o = idx;
    for (int64_t a : axes) o[a] = 0;
    size_t k = static_cast<size_t>(linear_offset(kept, o));
    double v = src[linear_offset(x.shape(), idx)];
    if (kind == ReduceKind::sum || kind == ReduceKind::mean) acc[k] += v;
    else if (count[k] == 0 || std::isnan(v)) acc[k] = v;
    else if (!std::isnan(acc[k])) acc[k] = kind == ReduceKind::max ? std::max(acc[k], v) : std::min(acc[k], v);
    ++count[k];
  });
  double* dst = y.data<double>();
  bool integer = !ctx.source_dtypes.empty() && is_integer(ctx.source_dtypes[0]);
  for (size_t k = 0; k < acc.size(); ++k) {
    if (kind != ReduceKind::mean) dst[k] = acc[k];
    else if (!count[k]) dst[k] = std::numeric_limits<double>::quiet_NaN();
    else if (integer) dst[k] = std::trunc(acc[k] / static_cast<double>(count[k]));  // C division, as the kernels
    else dst[k] = acc[k] / static_cast<double>(count[k]);
  }
}

static std::vector<OpCase> reduce_cases(bool mean, bool sum_like) {
  using A = std::vector<int64_t>;
  auto v = [](std::vector<double> x) { return in_values({static_cast<int64_t>(x.size())}, DType::i64, x); };
  Attributes flat{{"keepdims", int64_t{0}}};
  std::vector<OpCase> c;
  // Integer means truncate: fixed inputs with exact means keep the f64 reference exact too.
  DTypeSet types = mean ? kFloats : kFloats | kI64 | kI32;
  // The cases with one output draw from [-1, 2): a sum of values centred on zero lands near
  // zero now and then (a 60-value ReduceSum at 0.017 once in CI), where the f32 rounding of
  // its partial sums (2e-5 there) is a large relative error; off-centre values keep both signs.
  c.push_back({"all", {in({3, 4, 5}, -1, 2)}, {}, types});
  // A scalar reduced over its axis 0 (numpy and torch accept it): the scalar itself.
  c.push_back({"scalar_axis0", {in({})}, {{"axes", A{0}}}, kF32 | kF64});
  c.push_back({"all_flat", {in({3, 5}, -1, 2)}, flat, types});
  c.push_back({"attr_axis1", {in({3, 5, 7})}, {{"axes", A{1}}}, types});
  c.push_back({"attr_axes_flat", {in({3, 5, 7})}, {{"axes", A{0, 2}}, {"keepdims", int64_t{0}}}, types});
  c.push_back({"input_axes", {in({4, 6, 3}), v({-1, 0})}, {}, kF32 | kF64});
  c.push_back({"input_axes_flat", {in({4, 6, 3}), v({1})}, flat, kF32 | kF16});
  c.push_back({"last_axis", {in({7, 33})}, {{"axes", A{-1}}}, kF32 | kBF16});
  c.push_back({"first_axis", {in({33, 7})}, {{"axes", A{0}}}, kF32});
  c.push_back({"middle_axes", {in({2, 3, 4, 5})}, {{"axes", A{1, 2}}}, kF32});
  c.push_back({"noop_empty_axes", {in({3, 4}), in_values({0}, DType::i64, {})},
               {{"noop_with_empty_axes", int64_t{1}}}, kF32});
  c.push_back({"empty_axes_input", {in({3, 4}), in_values({0}, DType::i64, {})}, {}, kF32});
  c.push_back({"size1", {in({1, 1})}, {{"axes", A{1}}}, kF32});
  c.push_back({"scalar", {in({})}, {}, kF32});
  c.push_back({"empty_kept", {in({0, 5})}, {{"axes", A{1}}}, kF32});
  if (sum_like)  // sum of nothing is 0, float mean of nothing NaN
    c.push_back({"empty_reduced", {in({3, 0})}, {{"axes", A{1}}}, kF32 | kF64});
  if (!mean)  // past one 256-wide workgroup, with sums that no float would hold exactly
    c.push_back({"int_long_rows", {in({3, 700}, -1000000, 1000000)}, {{"axes", A{1}}}, kI64 | kI32});
  if (mean) {
    InputSpec exact;
    exact.shape = {2, 3};
    exact.values = {1, 2, 3, 4, -5, 7};  // row sums 6 and 6
    c.push_back({"int_exact", {exact}, {{"axes", A{1}}}, kI64 | kI32});
  }
  OpCase rows{"4096x4096_rows", {in({4096, 4096})}, {{"axes", A{1}}}, kF32};
  rows.perf = true;
  rows.tolerance = 1e-5;
  c.push_back(rows);
  OpCase cols{"4096x4096_cols", {in({4096, 4096})}, {{"axes", A{0}}}, kF32};
  cols.perf = true;
  cols.tolerance = 1e-5;
  c.push_back(cols);
  return c;
}

static OpSchema reduce_schema(std::string name) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = {"data", "axes?"};
  s.outputs = {"reduced"};
  s.attrs = {attr_int("keepdims", 1), attr_int("noop_with_empty_axes", 0),
             attr_optional("axes", AttrType::Ints)};
  s.host_inputs = {1};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats | kI64 | kI32);
    if (ctx.has_input(1)) require_dtype(ctx, 1, kI64 | kI32);
    std::vector<int64_t> axes = axes_of(ctx, ctx.shape(0));
    ctx.set_output(0, reduce_shape(ctx.shape(0), axes, ctx.attrs->get_int("keepdims") != 0), ctx.dtype(0));
  };
  s.reference = reduce_reference;
  bool is_mean = s.name == "ReduceMean", sum_like = is_mean || s.name == "ReduceSum";
  s.cases = [is_mean, sum_like] { return reduce_cases(is_mean, sum_like); };
  // One add or compare per input element.
  s.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attributes&) {
    return static_cast<double>(shape_numel(in.at(0)));
  };
  return s;
}

PORTA_REGISTER_OP(ReduceSum) { return reduce_schema("ReduceSum"); }
PORTA_REGISTER_OP(ReduceMean) { return reduce_schema("ReduceMean"); }
PORTA_REGISTER_OP(ReduceMax) { return reduce_schema("ReduceMax"); }
PORTA_REGISTER_OP(ReduceMin) { return reduce_schema("ReduceMin"); }

}  // namespace porta::opdef
