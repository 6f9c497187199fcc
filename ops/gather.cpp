// Gather: out[a..., i..., b...] = data[a..., indices[i...], b...] along `axis`. Negative
// indices count from the end; an index outside [-n, n) is a ShapeError, never a read.
#include "ops/common.hpp"
#include "ops/gather_util.hpp"
#include "ops/reference_util.hpp"

namespace porta::opdef {

void check_gather_index(int64_t index, int64_t dim, int64_t axis, const Shape& data) {
  if (index < -dim || index >= dim)
    throw ShapeError(str("[Gather] expected indices in [", -dim, ", ", dim, ") for axis ", axis,
                         " of data ", shape_str(data), ", got ", index));
}

PORTA_REGISTER_OP(Gather) {
  OpSchema s;
  s.name = "Gather";
  s.inputs = {"data", "indices"};
  s.host_read_inputs = {1};
  s.outputs = {"output"};
  s.attrs = {attr_int("axis", 0)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 1, kI64 | kI32);
    const Shape &data = ctx.shape(0), &indices = ctx.shape(1);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), static_cast<int64_t>(data.size()), "Gather");
    if (data.empty()) throw ShapeError("[Gather] expected data of rank >= 1, got a scalar");
    Shape out(data.begin(), data.begin() + axis);
    out.insert(out.end(), indices.begin(), indices.end());
    out.insert(out.end(), data.begin() + axis + 1, data.end());
    ctx.set_output(0, out, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &ind = ctx.in(1), &y = ctx.out(0);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Gather");
    int64_t q = ind.rank(), dim = x.shape()[axis];
    const double* idx_values = ind.data<double>();
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    for (int64_t i = 0; i < ind.numel(); ++i)
      check_gather_index(static_cast<int64_t>(idx_values[i]), dim, axis, x.shape());
    std::vector<int64_t> src_idx(x.shape().size());
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> ind_idx(idx.begin() + axis, idx.begin() + axis + q);
      int64_t k = static_cast<int64_t>(idx_values[linear_offset(ind.shape(), ind_idx)]);
      if (k < 0) k += dim;
      for (int64_t i = 0; i < x.rank(); ++i)
        src_idx[i] = i < axis ? idx[i] : i == axis ? k : idx[i + q - 1];
      dst[linear_offset(y.shape(), idx)] = src[linear_offset(x.shape(), src_idx)];
    });
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"axis0", {in({5, 3}), in_typed({4}, DType::i64, -5, 4)}, {}, kAllTypes});
    c.push_back({"axis1_2d_indices", {in({3, 7, 2}), in_typed({2, 3}, DType::i64, -7, 6)},
                 {{"axis", int64_t{1}}}, kF32 | kF16 | kI64});
    c.push_back({"negative_axis", {in({4, 6}), in_typed({5}, DType::i32, -6, 5)}, {{"axis", int64_t{-1}}}, kF32});
    c.push_back({"scalar_index", {in({4, 5}), in_values({}, DType::i64, {-2})}, {}, kF32 | kU8});
    c.push_back({"empty_indices", {in({4, 5}), in_values({0}, DType::i64, {})}, {{"axis", int64_t{1}}}, kF32});
    c.push_back({"empty_data", {in({3, 0}), in_typed({2}, DType::i64, 0, 2)}, {}, kF32});
    c.push_back({"size1", {in({1}), in_values({1}, DType::i64, {0})}, {}, kF32 | kBool});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
