// StridedCopy (ai.porta, version 1): Y holds the elements of X seen as a strided view.
//   Y_flat[row-major position of (j_0, ..., j_{r-1}) in dims] = X_flat[offset + sum_k j_k * strides[k]]
// X: any dtype and shape, read as its row-major elements; shape (ints, required): Y's shape;
// dims (ints, default: shape): the view's axes, whose product is Y's element count (a view
// may need more axes than Y has: attention's [B*H, S, D] heads are [B, H, S, D] in memory);
// strides (ints, required, one per axis of dims, in elements; negative and 0 allowed); offset
// (int, default 0). Every element Y reads must lie inside X: a view reaching outside it is a
// ShapeError naming the first and last element it would read. Y: X's dtype.
//
// Sessions emit it for a chain of data-movement nodes (Slice, Transpose, Reshape-likes) whose
// intermediate results nothing else reads (runtime/session_compile.cpp, merge_movement_chains):
// the chain is one view of its first input, copied once.
#include "ops/custom_common.hpp"
#include "ops/reference_util.hpp"
#include "ops/view_util.hpp"

namespace porta::opdef {

std::pair<int64_t, int64_t> strided_copy_span(const Shape& shape, const std::vector<int64_t>& strides, int64_t offset) {
  int64_t lo = offset, hi = offset;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0) return {0, -1};
    const int64_t reach = (shape[k] - 1) * strides[k];
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

namespace {

struct CopyAttrs {
  Shape shape, dims;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

CopyAttrs copy_attrs(const Attributes& a, int64_t x_numel) {
  CopyAttrs c{a.get_ints("shape"), {}, a.get_ints("strides"), a.get_int("offset", 0)};
  c.dims = a.has("dims") ? a.get_ints("dims") : c.shape;
  for (const Shape* s : {&c.shape, &c.dims})
    for (int64_t d : *s)
      if (d < 0) throw InvalidModel(str("[StridedCopy] ", s == &c.shape ? "shape " : "dims ", shape_str(*s), " has a negative dimension"));
  if (c.dims.size() != c.strides.size())
    throw InvalidModel(str("[StridedCopy] expected one stride per axis of dims ", shape_str(c.dims), ", got ",
                           c.strides.size(), " strides"));
  if (shape_numel(c.dims) != shape_numel(c.shape))
    throw InvalidModel(str("[StridedCopy] dims ", shape_str(c.dims), " should hold as many elements as shape ",
                           shape_str(c.shape), " (", shape_numel(c.shape), "), got ", shape_numel(c.dims)));
  auto [lo, hi] = strided_copy_span(c.dims, c.strides, c.offset);
  if (lo <= hi && (lo < 0 || hi >= x_numel))
    throw ShapeError(str("[StridedCopy] the view (dims ", shape_str(c.dims), ", strides ", shape_str(c.strides),
                         ", offset ", c.offset, ") reads elements ", lo, " to ", hi, " of X, which has ", x_numel));
  return c;
}

}  // namespace

StridedView strided_copy_view(const KernelContext& ctx) {
  CopyAttrs c = copy_attrs(*ctx.attrs, ctx.in(0).numel());
  return {c.dims, c.strides, c.offset};
}

PORTA_REGISTER_OP(StridedCopy) {
  OpSchema s;
  s.name = "StridedCopy";
  s.domain = kPortaDomain;
  s.inputs = {"X"};
  s.outputs = {"Y"};
  s.attrs = {attr_required("shape", AttrType::Ints), attr_optional("dims", AttrType::Ints),
             attr_required("strides", AttrType::Ints), attr_int("offset", 0)};
  s.infer = [](InferContext& ctx) {
    CopyAttrs c = copy_attrs(*ctx.attrs, shape_numel(ctx.shape(0)));
    ctx.set_output(0, c.shape, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &y = ctx.out(0);
    CopyAttrs c = copy_attrs(*ctx.attrs, x.numel());
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    for_each_index(c.dims, [&](const std::vector<int64_t>& idx) {
      int64_t at = c.offset;
      for (size_t k = 0; k < idx.size(); ++k) at += idx[k] * c.strides[k];
      dst[linear_offset(c.dims, idx)] = src[at];
    });
  };
  // Gather from X's flat elements at the view's addresses (an i64 constant shaped like Y).
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    const CopyAttrs c = copy_attrs(a, shape_numel(b.shape(in[0])));
    std::vector<double> at;
    at.reserve(static_cast<size_t>(shape_numel(c.shape)));
    for_each_index(c.dims, [&](const std::vector<int64_t>& idx) {
      int64_t e = c.offset;
      for (size_t k = 0; k < idx.size(); ++k) e += idx[k] * c.strides[k];
      at.push_back(static_cast<double>(e));
    });
    ValueId flat = b.add1("Reshape", {in[0], b.constant(Tensor::from_values({-1.0}, {1}, DType::i64))});
    ValueId where = b.constant(Tensor::from_values(at, c.shape, DType::i64));
    return std::vector<ValueId>{b.add1("Gather", {flat, where}, {{"axis", int64_t{0}}})};
  };
  s.flops = [](const std::vector<Shape>&, const std::vector<Shape>&, const Attributes&) { return 0.0; };
  s.cases = [] {
    using P = std::vector<int64_t>;
    auto view = [](P shape, P strides, int64_t offset, P dims = {}) {
      Attributes a;
      a.set("shape", shape);
      if (!dims.empty()) a.set("dims", dims);
      a.set("strides", strides);
      a.set("offset", offset);
      return a;
    };
    std::vector<OpCase> c;
    // Attention's heads: a [S=16, B=2, 192] projection's q block as [B*H=8, S, Dh=16], which
    // is [B, H, S, Dh] in memory.
    c.push_back({"heads_q", {in({16, 2, 192})}, view({8, 16, 16}, {192, 16, 384, 1}, 0, {2, 4, 16, 16}), kAllTypes});
    c.push_back({"heads_v", {in({16, 2, 192})}, view({2, 4, 16, 16}, {192, 16, 384, 1}, 128), kF32 | kF16});
    c.push_back({"reversed", {in({5, 7})}, view({7, 5}, {-1, 7}, 6), kF32 | kI64});
    c.push_back({"broadcast", {in({3})}, view({4, 3}, {0, 1}, 0), kF32 | kBool});
    c.push_back({"odd_3d", {in({9, 11, 13})}, view({5, 13, 3}, {2 * 143, 1, 2 * 13}, 17), kF32 | kU8});
    c.push_back({"rank6", {in({2, 3, 2, 3, 2, 3})}, view({3, 2, 3, 2, 3, 2}, {1, 3, 6, 18, 36, 108}, 0), kF32});
    c.push_back({"size1", {in({1, 1})}, view({1, 1, 1}, {1, 1, 1}, 0), kF32});
    c.push_back({"empty", {in({4, 3})}, view({0, 3}, {3, 1}, 0), kF32});
    c.push_back({"scalar", {in({6})}, view({}, {}, 5), kF32});
    c.push_back({"scalar_as_1x1", {in({6})}, view({1, 1}, {0}, 2, {1}), kF32});
    // Transposed with odd sizes, past one workgroup's 256 elements many times over.
    c.push_back({"large_t", {in({301, 300})}, view({300, 301}, {1, 300}, 0), kF32 | kF16});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
