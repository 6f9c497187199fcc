// porta ops — shared helpers for op definitions.
#include "ops/common.hpp"

#include <algorithm>

namespace porta::opdef {

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else
      throw ShapeError(str("[", op, "] shapes ", shape_str(a), " and ", shape_str(b),
                           " cannot be broadcast (axis ", i, ": ", da, " vs ", db, ")"));
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw ShapeError(str("[", op, "] axis ", axis, " is out of range for rank ", rank));
  if (rank == 0) return 0;
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, std::string_view op) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(normalize_axis(a, rank, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw ShapeError(str("[", op, "] axes contain a repeated axis"));
  return out;
}

void infer_same_as_input0(InferContext& ctx) { ctx.set_output(0, ctx.shape(0), ctx.dtype(0)); }

void infer_broadcast(InferContext& ctx, std::optional<DType> out_dtype) {
  Shape s = ctx.shape(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) s = broadcast_shapes(s, ctx.shape(i), ctx.op->name);
  ctx.set_output(0, s, out_dtype.value_or(ctx.dtype(0)));
}

void require_same_dtype(const InferContext& ctx, std::string_view what) {
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.dtype(i) != ctx.dtype(0))
      throw DTypeError(str("[", ctx.op->name, "] ", what, " must share one dtype: input 0 is ",
                           dtype_name(ctx.dtype(0)), ", input ", i, " is ", dtype_name(ctx.dtype(i))));
}

void require_dtype(const InferContext& ctx, size_t i, DTypeSet allowed) {
  if (!dtype_in(allowed, ctx.dtype(i)))
    throw DTypeError(str("[", ctx.op->name, "] input ", i, " must be one of ",
                         dtype_set_names(allowed), ", got ", dtype_name(ctx.dtype(i))));
}

AttrDef attr_int(std::string name, int64_t def) { return {std::move(name), AttrType::Int, AttrValue(def)}; }
AttrDef attr_float(std::string name, double def) { return {std::move(name), AttrType::Float, AttrValue(def)}; }
AttrDef attr_string(std::string name, std::string def) {
  return {std::move(name), AttrType::String, AttrValue(std::move(def))};
}
AttrDef attr_ints(std::string name, std::vector<int64_t> def) {
  return {std::move(name), AttrType::Ints, AttrValue(std::move(def))};
}
AttrDef attr_floats(std::string name, std::vector<double> def) {
  return {std::move(name), AttrType::Floats, AttrValue(std::move(def))};
}
AttrDef attr_optional(std::string name, AttrType type) { return {std::move(name), type, std::nullopt}; }
AttrDef attr_required(std::string name, AttrType type) {
  return {std::move(name), type, std::nullopt, true};
}

InputSpec in(Shape shape, double lo, double hi) {
  InputSpec s;
  s.shape = std::move(shape);
  s.lo = lo;
  s.hi = hi;
  return s;
}
InputSpec in_typed(Shape shape, DType dtype, double lo, double hi) {
  InputSpec s = in(std::move(shape), lo, hi);
  s.dtype = dtype;
  s.integers = !is_floating(dtype);
  return s;
}
InputSpec in_values(Shape shape, DType dtype, std::vector<double> values) {
  InputSpec s;
  s.shape = std::move(shape);
  s.dtype = dtype;
  s.values = std::move(values);
  return s;
}
InputSpec in_absent() {
  InputSpec s;
  s.absent = true;
  return s;
}

FlopsFn flops_per_output_element(double per_element) {
  return [per_element](const std::vector<Shape>&, const std::vector<Shape>& out, const Attributes&) {
    return out.empty() ? 0.0 : per_element * static_cast<double>(shape_numel(out[0]));
  };
}

}  // namespace porta::opdef
