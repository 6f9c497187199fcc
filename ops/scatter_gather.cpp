// The rest of the Gather family: GatherElements, GatherND, ScatterElements, ScatterND.
// Negative indices count from the end; an index outside [-n, n) is a ShapeError naming the op,
// the data axis, its bound and the value, never a read or write outside a buffer. The index
// plans (nd_plan, element_offsets, scatter_groups: ops/gather_util.hpp) are shared by the
// host-side parts of the kernels; the float64 references below are written without them.
//
// Scatter with reduction 'none' and duplicate indices: ONNX leaves the result undefined;
// porta's kernels make it "the last update wins" (in the order of the indices) everywhere.
#include <algorithm>
#include <numeric>

#include "ops/common.hpp"
#include "ops/gather_util.hpp"
#include "ops/reference_util.hpp"

namespace porta::opdef {

int64_t check_axis_index(std::string_view op, int64_t index, int64_t axis, const Shape& data) {
  int64_t dim = data[static_cast<size_t>(axis)];
  if (index < -dim || index >= dim)
    throw ShapeError(str("[", op, "] expected indices in [", -dim, ", ", dim, ") for axis ", axis,
                         " of data ", shape_str(data), ", got ", index));
  return index < 0 ? index + dim : index;
}

ScatterReduction scatter_reduction(const Attributes& attrs, std::string_view op) {
  std::string r = attrs.get_string("reduction", "none");
  if (r == "none") return ScatterReduction::none;
  if (r == "add") return ScatterReduction::add;
  if (r == "mul") return ScatterReduction::mul;
  if (r == "max") return ScatterReduction::max;
  if (r == "min") return ScatterReduction::min;
  throw InvalidArgument(str("[", op, "] expected reduction none, add, mul, max or min, got '", r, "'"));
}

const char* reduction_name(ScatterReduction r) {
  switch (r) {
    case ScatterReduction::add: return "add";
    case ScatterReduction::mul: return "mul";
    case ScatterReduction::max: return "max";
    case ScatterReduction::min: return "min";
    default: return "none";
  }
}

std::vector<int64_t> host_index_values(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  Tensor c = t.contiguous();
  if (c.dtype() == DType::i64) std::copy_n(c.data<int64_t>(), v.size(), v.begin());
  else if (c.dtype() == DType::i32) std::copy_n(c.data<int32_t>(), v.size(), v.begin());
  else throw DTypeError(str("[index] expected indices of dtype i64 or i32, got ", dtype_name(c.dtype())));
  return v;
}

NdPlan nd_plan(std::string_view op, const Shape& data, const Shape& indices, int64_t batch_dims,
               const std::vector<int64_t>& idx) {
  NdPlan p;
  int64_t k = indices.back(), b = batch_dims, r = static_cast<int64_t>(data.size());
  int64_t batch = 1, rows_per_batch = 1;
  for (int64_t i = 0; i < b; ++i) batch *= data[i];
  for (int64_t i = b; i < b + k; ++i) rows_per_batch *= data[i];
  for (int64_t i = b + k; i < r; ++i) p.slice *= data[i];
  int64_t tuples = k == 0 ? 0 : static_cast<int64_t>(idx.size()) / k;
  if (k == 0) {  // empty tuples: each addresses its batch entry's whole block
    tuples = 1;
    for (size_t i = 0; i + 1 < indices.size(); ++i) tuples *= indices[i];
  }
  int64_t per_batch = batch == 0 ? 0 : tuples / batch;
  p.rows.resize(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t row = 0;
    for (int64_t j = 0; j < k; ++j)
      row = row * data[b + j] + check_axis_index(op, idx[t * k + j], b + j, data);
    p.rows[t] = (t / per_batch) * rows_per_batch + row;
  }
  return p;
}

std::vector<int64_t> element_offsets(std::string_view op, const Shape& data, const Shape& indices,
                                     int64_t axis, const std::vector<int64_t>& idx) {
  int r = static_cast<int>(data.size());
  std::vector<int64_t> out(idx.size());
  if (idx.empty()) return out;
  std::vector<int64_t> dstride(r, 1), pos(r, 0);
  for (int i = r - 2; i >= 0; --i) dstride[i] = dstride[i + 1] * data[i + 1];
  for (size_t e = 0; e < idx.size(); ++e) {
    int64_t off = 0;
    for (int i = 0; i < r; ++i)
      off += (i == axis ? check_axis_index(op, idx[e], axis, data) : pos[i]) * dstride[i];
    out[e] = off;
    for (int i = r - 1; i >= 0; --i) {  // next position of `indices` in C order
      if (++pos[i] < indices[i]) break;
      pos[i] = 0;
    }
  }
  return out;
}

ScatterGroups scatter_groups(const std::vector<int64_t>& target, int64_t target_rows, bool last_wins) {
  ScatterGroups g;
  if (last_wins) {
    std::vector<int64_t> last(static_cast<size_t>(target_rows), -1);
    for (size_t u = 0; u < target.size(); ++u) last[target[u]] = static_cast<int64_t>(u);
    for (int64_t l : last)
      if (l >= 0) {
        g.order.push_back(l);
        g.group_target.push_back(target[l]);
      }
    g.max_group = g.order.empty() ? 0 : 1;
    return g;
  }
  // Counting sort by target: stable, O(updates + target rows).
  std::vector<int64_t> count(static_cast<size_t>(target_rows) + 1, 0);
  for (int64_t t : target) ++count[t + 1];
  for (int64_t t = 0; t < target_rows; ++t) {
    if (count[t + 1] > 0) {
      g.starts.push_back(count[t]);
      g.group_target.push_back(t);
      g.max_group = std::max(g.max_group, count[t + 1]);
    }
    count[t + 1] += count[t];
  }
  g.starts.push_back(static_cast<int64_t>(target.size()));
  g.order.resize(target.size());
  std::vector<int64_t> next(count.begin(), count.end() - 1);
  for (size_t u = 0; u < target.size(); ++u) g.order[next[target[u]]++] = static_cast<int64_t>(u);
  return g;
}

namespace {

// ---- shared infer helpers -------------------------------------------------------------------

void require_updates_dtype(InferContext& ctx, std::string_view op) {
  if (ctx.dtype(2) != ctx.dtype(0))
    throw DTypeError(str("[", op, "] expected updates of the data's dtype ", dtype_name(ctx.dtype(0)), ", got ",
                         dtype_name(ctx.dtype(2))));
}

// GatherElements / ScatterElements: indices of data's rank, no larger than data off the axis.
int64_t infer_elements(InferContext& ctx, std::string_view op) {
  require_dtype(ctx, 1, kI64 | kI32);
  const Shape &data = ctx.shape(0), &ind = ctx.shape(1);
  if (data.empty()) throw ShapeError(str("[", op, "] expected data of rank >= 1, got a scalar"));
  int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), static_cast<int64_t>(data.size()), op);
  if (ind.size() != data.size())
    throw ShapeError(str("[", op, "] expected indices of the data's rank ", data.size(), " (data ", shape_str(data),
                         "), got ", shape_str(ind)));
  for (size_t i = 0; i < data.size(); ++i)
    if (static_cast<int64_t>(i) != axis && ind[i] > data[i])
      throw ShapeError(str("[", op, "] expected indices no larger than data ", shape_str(data), " off axis ", axis,
                           ", got ", shape_str(ind), " (dim ", i, ")"));
  return axis;
}

// GatherND / ScatterND: tuple length k = last dim of indices.
int64_t infer_nd(InferContext& ctx, std::string_view op, int64_t batch_dims) {
  require_dtype(ctx, 1, kI64 | kI32);
  const Shape &data = ctx.shape(0), &ind = ctx.shape(1);
  int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(ind.size());
  if (r < 1 || q < 1)
    throw ShapeError(str("[", op, "] expected data and indices of rank >= 1, got data ", shape_str(data),
                         " and indices ", shape_str(ind)));
  if (batch_dims < 0 || batch_dims >= std::min(r, q))
    throw ShapeError(str("[", op, "] expected batch_dims in [0, ", std::min(r, q), ") for data ", shape_str(data),
                         " and indices ", shape_str(ind), ", got ", batch_dims));
  for (int64_t i = 0; i < batch_dims; ++i)
    if (data[i] != ind[i])
      throw ShapeError(str("[", op, "] expected the first ", batch_dims, " dims of data ", shape_str(data),
                           " and indices to agree, got indices ", shape_str(ind)));
  int64_t k = ind.back();
  if (k > r - batch_dims)
    throw ShapeError(str("[", op, "] expected the last dim of indices (the index tuple) to be at most ", r - batch_dims,
                         " for data ", shape_str(data), (batch_dims ? str(" and batch_dims ", batch_dims) : ""),
                         ", got indices ", shape_str(ind)));
  return k;
}

void apply(ScatterReduction r, double& dst, double v) {
  switch (r) {
    case ScatterReduction::none: dst = v; break;
    case ScatterReduction::add: dst += v; break;
    case ScatterReduction::mul: dst *= v; break;
    case ScatterReduction::max: dst = std::max(dst, v); break;
    case ScatterReduction::min: dst = std::min(dst, v); break;
  }
}

int64_t ref_index(std::string_view op, double v, int64_t axis, const Shape& data) {
  return check_axis_index(op, static_cast<int64_t>(v), axis, data);
}

// Every index value of an ND reference is checked before anything is written.
void ref_check_nd(std::string_view op, const Tensor& x, const Tensor& ind, int64_t b) {
  int64_t k = ind.shape().back();
  for (int64_t i = 0; i < ind.numel(); ++i) ref_index(op, ind.data<double>()[i], b + i % k, x.shape());
}

constexpr DTypeSet kScatterTypes = kF32 | kF16 | kI64 | kI32;

}  // namespace

// ---- GatherElements -------------------------------------------------------------------------

PORTA_REGISTER_OP(GatherElements) {
  OpSchema s;
  s.name = "GatherElements";
  s.inputs = {"data", "indices"};
  s.host_read_inputs = {1};
  s.outputs = {"output"};
  s.attrs = {attr_int("axis", 0)};
  s.infer = [](InferContext& ctx) {
    infer_elements(ctx, "GatherElements");
    ctx.set_output(0, ctx.shape(1), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &ind = ctx.in(1), &y = ctx.out(0);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "GatherElements");
    for (int64_t i = 0; i < ind.numel(); ++i) ref_index("GatherElements", ind.data<double>()[i], axis, x.shape());
    for_each_index(ind.shape(), [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> src = idx;
      src[axis] = ref_index("GatherElements", ind.data<double>()[linear_offset(ind.shape(), idx)], axis, x.shape());
      y.data<double>()[linear_offset(y.shape(), idx)] = x.data<double>()[linear_offset(x.shape(), src)];
    });
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"axis0", {in({3, 4}), in_typed({2, 4}, DType::i64, -3, 2)}, {}, kAllTypes});
    c.push_back({"axis1_longer_i32", {in({3, 5}), in_typed({3, 7}, DType::i32, -5, 4)}, {{"axis", int64_t{1}}},
                 kF32 | kF16 | kI64 | kI32});
    c.push_back({"negative_axis_3d", {in({2, 3, 4}), in_typed({2, 2, 5}, DType::i64, -4, 3)},
                 {{"axis", int64_t{-1}}}, kF32 | kI64});
    c.push_back({"smaller_off_axis", {in({4, 5}), in_typed({2, 3}, DType::i64, -4, 3)}, {}, kF32});
    c.push_back({"broadcast_like", {in({1, 6, 1}), in_typed({1, 6, 1}, DType::i64, -6, 5)}, {{"axis", int64_t{1}}},
                 kF32});
    c.push_back({"empty_indices", {in({3, 4}), in_values({0, 4}, DType::i64, {})}, {}, kF32});
    c.push_back({"empty_data", {in({0, 3}), in_values({0, 3}, DType::i64, {})}, {}, kF32});
    c.push_back({"size1", {in({1}), in_values({1}, DType::i64, {0})}, {}, kF32 | kBool});
    c.push_back({"large", {in({300, 260}), in_typed({300, 260}, DType::i64, -300, 299)}, {}, kF32 | kF16});
    return c;
  };
  return s;
}

// ---- GatherND -------------------------------------------------------------------------------

PORTA_REGISTER_OP(GatherND) {
  OpSchema s;
  s.name = "GatherND";
  s.inputs = {"data", "indices"};
  s.host_read_inputs = {1};
  s.outputs = {"output"};
  s.attrs = {attr_int("batch_dims", 0)};
  s.infer = [](InferContext& ctx) {
    int64_t b = ctx.attrs->get_int("batch_dims");
    int64_t k = infer_nd(ctx, "GatherND", b);
    const Shape &data = ctx.shape(0), &ind = ctx.shape(1);
    Shape out(ind.begin(), ind.end() - 1);
    out.insert(out.end(), data.begin() + b + k, data.end());
    ctx.set_output(0, out, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &ind = ctx.in(1), &y = ctx.out(0);
    int64_t b = ctx.attrs->get_int("batch_dims"), q = ind.rank(), k = ind.shape().back();
    ref_check_nd("GatherND", x, ind, b);
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      // idx = [batch..., tuple position..., slice...]
      std::vector<int64_t> tuple_at(idx.begin(), idx.begin() + (q - 1));
      tuple_at.push_back(0);
      std::vector<int64_t> src(idx.begin(), idx.begin() + b);
      for (int64_t j = 0; j < k; ++j) {
        tuple_at.back() = j;
        src.push_back(ref_index("GatherND", ind.data<double>()[linear_offset(ind.shape(), tuple_at)], b + j, x.shape()));
      }
      src.insert(src.end(), idx.begin() + (q - 1), idx.end());
      y.data<double>()[linear_offset(y.shape(), idx)] = x.data<double>()[linear_offset(x.shape(), src)];
    });
  };
  s.cases = [] {
    std::vector<OpCase> c;
    auto b = [](int64_t v) { return Attributes{{"batch_dims", v}}; };
    c.push_back({"rows", {in({4, 3}), in_typed({2, 1}, DType::i64, -4, 3)}, {}, kAllTypes});
    c.push_back({"elements", {in({3, 3}), in_typed({5, 2}, DType::i64, -3, 2)}, {}, kF32 | kF16 | kI64 | kI32});
    c.push_back({"scalar_out", {in({2, 2}), in_values({2}, DType::i64, {1, -2})}, {}, kF32});
    c.push_back({"odd_3d_i32", {in({5, 3, 7}), in_typed({2, 3, 2}, DType::i32, -3, 2)}, {}, kF32 | kI64});
    c.push_back({"batch1", {in({2, 3, 4}), in_typed({2, 5, 1}, DType::i64, -3, 2)}, b(1), kF32 | kF16});
    c.push_back({"batch1_k2", {in({3, 4, 4, 2}), in_typed({3, 5, 2}, DType::i64, -4, 3)}, b(1), kF32 | kI32});
    c.push_back({"batch2", {in({2, 3, 4, 5}), in_typed({2, 3, 2, 2}, DType::i64, -4, 3)}, b(2), kF32 | kI64});
    c.push_back({"batch2_scalar_rows", {in({2, 3, 4}), in_typed({2, 3, 1}, DType::i64, -4, 3)}, b(2), kF32});
    c.push_back({"broadcast_like", {in({1, 5, 1}), in_typed({1, 3, 1}, DType::i64, -5, 4)}, b(1), kF32});
    c.push_back({"empty_indices", {in({4, 3}), in_values({0, 1}, DType::i64, {})}, {}, kF32});
    c.push_back({"empty_slice", {in({4, 0}), in_values({2, 1}, DType::i64, {1, -4})}, {}, kF32});
    c.push_back({"size1", {in({1}), in_values({1, 1}, DType::i64, {0})}, {}, kF32 | kU8});
    c.push_back({"large", {in({400, 300}), in_typed({350, 1}, DType::i64, -400, 399)}, {}, kF32 | kF16});
    return c;
  };
  return s;
}

// ---- ScatterElements ------------------------------------------------------------------------

PORTA_REGISTER_OP(ScatterElements) {
  OpSchema s;
  s.name = "ScatterElements";
  s.inputs = {"data", "indices", "updates"};
  s.host_read_inputs = {1};
  s.outputs = {"output"};
  s.attrs = {attr_int("axis", 0), attr_string("reduction", "none")};
  s.infer = [](InferContext& ctx) {
    infer_elements(ctx, "ScatterElements");
    require_updates_dtype(ctx, "ScatterElements");
    scatter_reduction(*ctx.attrs, "ScatterElements");
    if (ctx.shape(2) != ctx.shape(1))
      throw ShapeError(str("[ScatterElements] expected updates of the indices' shape ", shape_str(ctx.shape(1)),
                           ", got ", shape_str(ctx.shape(2))));
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2), &y = ctx.out(0);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "ScatterElements");
    ScatterReduction r = scatter_reduction(*ctx.attrs, "ScatterElements");
    for (int64_t i = 0; i < ind.numel(); ++i) ref_index("ScatterElements", ind.data<double>()[i], axis, x.shape());
    std::copy_n(x.data<double>(), x.numel(), y.data<double>());
    for_each_index(ind.shape(), [&](const std::vector<int64_t>& idx) {
      int64_t at = linear_offset(ind.shape(), idx);
      std::vector<int64_t> dst = idx;
      dst[axis] = ref_index("ScatterElements", ind.data<double>()[at], axis, x.shape());
      apply(r, y.data<double>()[linear_offset(y.shape(), dst)], upd.data<double>()[at]);
    });
  };
  s.cases = [] {
    std::vector<OpCase> c;
    auto red = [](int64_t axis, const char* r) { return Attributes{{"axis", axis}, {"reduction", std::string(r)}}; };
    // 'none' cases use indices unique along the axis (ONNX leaves duplicates undefined).
    c.push_back({"none_axis0", {in({3, 3}), in_values({2, 3}, DType::i64, {1, 0, 2, 0, 2, 1}), in({2, 3})}, {},
                 kScatterTypes});
    c.push_back({"none_axis1_negative", {in({2, 5}), in_values({2, 2}, DType::i64, {-1, 1, 0, -5}), in({2, 2})},
                 red(1, "none"), kF32 | kI64});
    c.push_back({"add_duplicates", {in({4, 5, 3}), in_typed({4, 7, 2}, DType::i64, -5, 4), in({4, 7, 2})}, red(1, "add"),
                 kScatterTypes | kI8});
    c.push_back({"mul_negative_axis", {in({3, 6}), in_typed({3, 4}, DType::i64, -6, 5), in({3, 4})}, red(-1, "mul"),
                 kScatterTypes});
    c.push_back({"max", {in({3, 5}), in_typed({2, 5}, DType::i64, -3, 2), in({2, 5})}, red(0, "max"), kF32 | kI32});
    c.push_back({"min", {in({3, 5}), in_typed({3, 4}, DType::i64, -5, 4), in({3, 4})}, red(1, "min"), kF32 | kI64});
    c.push_back({"broadcast_like", {in({1, 7}), in_typed({1, 9}, DType::i64, -7, 6), in({1, 9})}, red(1, "add"), kF32});
    c.push_back({"empty_indices", {in({3, 4}), in_values({0, 4}, DType::i64, {}), in({0, 4})}, red(0, "add"), kF32});
    c.push_back({"empty_data", {in({0, 3}), in_values({0, 3}, DType::i64, {}), in({0, 3})}, {}, kF32});
    c.push_back({"size1", {in({1}), in_values({1}, DType::i64, {0}), in({1})}, {}, kF32 | kF16});
    // Unique along axis 0 per column: (7 i + j) mod 256 is a bijection of i; half negative.
    std::vector<double> perm;
    for (int64_t i = 0; i < 256; ++i)
      for (int64_t j = 0; j < 300; ++j) perm.push_back(static_cast<double>((7 * i + j) % 256 - ((i + j) % 2 ? 256 : 0)));
    c.push_back({"large_none", {in({256, 300}), in_values({256, 300}, DType::i64, perm), in({256, 300})}, {},
                 kF32 | kF16});
    c.push_back({"large_add", {in({300, 300}), in_typed({300, 400}, DType::i64, -300, 299), in({300, 400})},
                 red(1, "add"), kF32});
    return c;
  };
  return s;
}

// ---- ScatterND ------------------------------------------------------------------------------

PORTA_REGISTER_OP(ScatterND) {
  OpSchema s;
  s.name = "ScatterND";
  s.inputs = {"data", "indices", "updates"};
  s.host_read_inputs = {1};
  s.outputs = {"output"};
  s.attrs = {attr_string("reduction", "none")};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 1, kI64);
    int64_t k = infer_nd(ctx, "ScatterND", 0);
    require_updates_dtype(ctx, "ScatterND");
    scatter_reduction(*ctx.attrs, "ScatterND");
    const Shape &data = ctx.shape(0), &ind = ctx.shape(1);
    Shape want(ind.begin(), ind.end() - 1);
    want.insert(want.end(), data.begin() + k, data.end());
    if (ctx.shape(2) != want)
      throw ShapeError(str("[ScatterND] expected updates of shape ", shape_str(want), " (indices ", shape_str(ind),
                           ", data ", shape_str(data), "), got ", shape_str(ctx.shape(2))));
    ctx.set_output(0, data, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2), &y = ctx.out(0);
    ScatterReduction r = scatter_reduction(*ctx.attrs, "ScatterND");
    int64_t q = ind.rank(), k = ind.shape().back();
    ref_check_nd("ScatterND", x, ind, 0);
    std::copy_n(x.data<double>(), x.numel(), y.data<double>());
    // Updates in C order: [tuple position..., slice...].
    for_each_index(upd.shape(), [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> tuple_at(idx.begin(), idx.begin() + (q - 1));
      tuple_at.push_back(0);
      std::vector<int64_t> dst;
      for (int64_t j = 0; j < k; ++j) {
        tuple_at.back() = j;
        dst.push_back(ref_index("ScatterND", ind.data<double>()[linear_offset(ind.shape(), tuple_at)], j, x.shape()));
      }
      dst.insert(dst.end(), idx.begin() + (q - 1), idx.end());
      apply(r, y.data<double>()[linear_offset(y.shape(), dst)], upd.data<double>()[linear_offset(upd.shape(), idx)]);
    });
  };
  s.cases = [] {
    std::vector<OpCase> c;
    auto red = [](const char* r) { return Attributes{{"reduction", std::string(r)}}; };
    // 'none' cases use unique index tuples (ONNX leaves duplicates undefined).
    c.push_back({"none_rows_negative", {in({4, 5}), in_values({3, 1}, DType::i64, {-1, 0, 2}), in({3, 5})}, {},
                 kScatterTypes | kU8 | kBool | kF64});
    c.push_back({"none_elements", {in({2, 3, 4}), in_values({2, 2, 3}, DType::i64, {0, 1, 2, 1, -1, -4, 1, 0, 0, 0, 2, 3}),
                                   in({2, 2})}, red("none"), kF32 | kI32});
    c.push_back({"add_duplicates", {in({5, 3}), in_typed({7, 1}, DType::i64, -5, 4), in({7, 3})}, red("add"),
                 kScatterTypes});
    c.push_back({"mul_k2", {in({3, 4, 2}), in_typed({2, 3, 2}, DType::i64, -3, 2), in({2, 3, 2})}, red("mul"),
                 kScatterTypes});
    c.push_back({"max", {in({4, 3}), in_typed({6, 1}, DType::i64, -4, 3), in({6, 3})}, red("max"), kF32 | kI64});
    c.push_back({"min", {in({3, 3}), in_typed({5, 2}, DType::i64, -3, 2), in({5})}, red("min"), kF32 | kI32});
    // swin_t's attention-mask pattern: whole-tensor element indices with leading unit dims.
    std::vector<double> grid;
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t w = 0; w < 5; ++w) grid.insert(grid.end(), {0, static_cast<double>(h + 1), static_cast<double>(-w - 1), 0});
    c.push_back({"broadcast_like", {in({1, 4, 7, 1}), in_values({1, 3, 5, 4}, DType::i64, grid), in({1, 3, 5})}, {},
                 kF32 | kI64});
    c.push_back({"empty_indices", {in({4, 3}), in_values({0, 1}, DType::i64, {}), in({0, 3})}, red("add"), kF32});
    c.push_back({"empty_slice", {in({4, 0}), in_values({2, 1}, DType::i64, {1, -4}), in({2, 0})}, {}, kF32});
    c.push_back({"size1", {in({1}), in_values({1, 1}, DType::i64, {0}), in({1})}, {}, kF32 | kF16});
    std::vector<double> rows;
    for (int64_t i = 0; i < 256; ++i) rows.push_back(static_cast<double>(2 * i - 512));
    c.push_back({"large_none", {in({512, 160}), in_values({256, 1}, DType::i64, rows), in({256, 160})}, {},
                 kF32 | kF16});
    c.push_back({"large_add", {in({300, 250}), in_typed({400, 1}, DType::i64, -300, 299), in({400, 250})}, red("add"),
                 kF32});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
