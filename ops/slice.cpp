// Slice (opset 13): starts/ends/axes/steps inputs; negative indices count from the end,
// out-of-range values clamp (INT64_MAX / INT64_MIN mean "to the end"), negative steps walk
// backwards, step 0 is a ShapeError.
#include "ops/common.hpp"
#include "ops/reference_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {
namespace {

template <typename Ctx>
SliceGeometry geometry(const Ctx& ctx, const Shape& in) {
  return slice_geometry(in, optional_ints(ctx, 1), optional_ints(ctx, 2), optional_ints(ctx, 3),
                        optional_ints(ctx, 4), "Slice");
}

}  // namespace

PORTA_REGISTER_OP(Slice) {
  OpSchema s;
  s.name = "Slice";
  s.inputs = {"data", "starts", "ends", "axes?", "steps?"};
  s.outputs = {"output"};
  s.host_inputs = {1, 2, 3, 4};
  s.infer = [](InferContext& ctx) {
    for (size_t i = 1; i < ctx.num_inputs(); ++i)
      if (ctx.has_input(i)) require_dtype(ctx, i, kI64 | kI32);
    ctx.set_output(0, geometry(ctx, ctx.shape(0)).out_shape(), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &y = ctx.out(0);
    SliceGeometry g = geometry(ctx, x.shape());
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    std::vector<int64_t> src_idx(x.shape().size());
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      for (size_t i = 0; i < idx.size(); ++i) src_idx[i] = g.start[i] + idx[i] * g.step[i];
      dst[linear_offset(y.shape(), idx)] = src[linear_offset(x.shape(), src_idx)];
    });
  };
  s.cases = [] {
    auto v = [](std::vector<double> x) { return in_values({static_cast<int64_t>(x.size())}, DType::i64, x); };
    // Cases carry doubles, and 2^63 would overflow on the way to i64: huge stand-ins here,
    // exact INT64_MAX / INT64_MIN in tests/shape_errors_test.cpp.
    constexpr double kMax = 9.0e18, kMin = -9.0e18;
    std::vector<OpCase> c;
    c.push_back({"basic", {in({5, 7}), v({1, 2}), v({4, 6})}, {}, kAllTypes});
    c.push_back({"axes_steps", {in({6, 9}), v({1}), v({8}), v({1}), v({3})}, {}, kF32 | kF16});
    c.push_back({"negative_indices", {in({5, 6}), v({-4}), v({-1}), v({-1})}, {}, kF32});
    c.push_back({"negative_step", {in({7, 4}), v({-1, 5}), v({kMin, 0}), v({1, 0}), v({-1, -2})}, {}, kF32 | kI64});
    c.push_back({"int64_max_end", {in({4, 6}), v({2}), v({kMax}), v({1})}, {}, kF32});
    c.push_back({"clamped", {in({4, 5}), v({-100, 2}), v({100, 1000})}, {}, kF32 | kU8});
    c.push_back({"empty_result", {in({4, 5}), v({3}), v({1}), v({0})}, {}, kF32});
    c.push_back({"empty_input", {in({0, 5}), v({0}), v({2}), v({1})}, {}, kF32});
    c.push_back({"reverse_all", {in({9}), v({kMax}), v({kMin}), in_absent(), v({-1})}, {}, kF32 | kBool});
    c.push_back({"i32_params", {in({3, 8}), in_values({1}, DType::i32, {1}), in_values({1}, DType::i32, {7}),
                                in_values({1}, DType::i32, {-1}), in_values({1}, DType::i32, {2})}, {}, kF32});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
