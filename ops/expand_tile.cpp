// Expand (bidirectional broadcast to a shape input) and Tile (repeat along each axis).
#include "ops/common.hpp"
#include "ops/reference_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Expand) {
  OpSchema s;
  s.name = "Expand";
  s.inputs = {"input", "shape"};
  s.outputs = {"output"};
  s.host_inputs = {1};
  s.infer = [](InferContext& ctx) {
    ctx.set_output(0, expand_shape(ctx.shape(0), ctx.int_values(1), "Expand"), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &y = ctx.out(0);
    size_t lead = y.shape().size() - x.shape().size();
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    std::vector<int64_t> src_idx(x.shape().size());
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      for (size_t i = 0; i < src_idx.size(); ++i) src_idx[i] = x.shape()[i] == 1 ? 0 : idx[lead + i];
      dst[linear_offset(y.shape(), idx)] = src[linear_offset(x.shape(), src_idx)];
    });
  };
  s.cases = [] {
    auto v = [](std::vector<double> x) { return in_values({static_cast<int64_t>(x.size())}, DType::i64, x); };
    std::vector<OpCase> c;
    c.push_back({"row", {in({1, 5}), v({4, 5})}, {}, kAllTypes});
    c.push_back({"new_axes", {in({3, 1}), v({2, 3, 6})}, {}, kF32 | kF16});
    c.push_back({"bidirectional", {in({3, 1, 4}), v({2, 1, 5, 1})}, {}, kF32 | kI64});
    c.push_back({"shorter_shape", {in({2, 3}), v({3})}, {}, kF32});
    c.push_back({"scalar", {in({}), v({2, 3})}, {}, kF32});
    c.push_back({"to_empty", {in({1, 3}), v({0, 3})}, {}, kF32});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Tile) {
  OpSchema s;
  s.name = "Tile";
  s.inputs = {"input", "repeats"};
  s.outputs = {"output"};
  s.host_inputs = {1};
  s.infer = [](InferContext& ctx) {
    ctx.set_output(0, tile_shape(ctx.shape(0), ctx.int_values(1), "Tile"), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &y = ctx.out(0);
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    std::vector<int64_t> src_idx(x.shape().size());
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      for (size_t i = 0; i < src_idx.size(); ++i) src_idx[i] = idx[i] % x.shape()[i];
      dst[linear_offset(y.shape(), idx)] = src[linear_offset(x.shape(), src_idx)];
    });
  };
  s.cases = [] {
    auto v = [](std::vector<double> x) { return in_values({static_cast<int64_t>(x.size())}, DType::i64, x); };
    std::vector<OpCase> c;
    c.push_back({"2d", {in({2, 3}), v({2, 3})}, {}, kAllTypes});
    c.push_back({"ones", {in({3, 5}), v({1, 1})}, {}, kF32});
    c.push_back({"3d", {in({2, 1, 3}), v({1, 4, 2})}, {}, kF32 | kF16 | kI32});
    c.push_back({"zero_repeat", {in({2, 3}), v({0, 2})}, {}, kF32});
    c.push_back({"scalar", {in({}), in_values({0}, DType::i64, {})}, {}, kF32});
    c.push_back({"empty", {in({0, 3}), v({3, 1})}, {}, kF32});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
