// CumSum: running sums along `axis` (input 1: a 0-D or 1-element i64/i32 tensor, a host
// input). exclusive = 1 leaves the current element out (the first sum is 0), reverse = 1 sums
// from the end of the axis. Float and i32/i64 data; integer sums wrap to the element type.
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::opdef {
namespace {

int64_t axis_value(const std::vector<int64_t>& v, const Shape& axis_shape, int64_t rank) {
  if (v.size() != 1 || axis_shape.size() > 1)
    throw ShapeError(str("[CumSum] expected axis as a 0-D or 1-element tensor, got shape ", shape_str(axis_shape)));
  if (rank == 0) throw ShapeError("[CumSum] expected x of rank >= 1, got a scalar");
  if (v[0] < -rank || v[0] >= rank)
    throw ShapeError(str("[CumSum] expected axis in [", -rank, ", ", rank, "), got ", v[0]));
  return v[0] < 0 ? v[0] + rank : v[0];
}

}  // namespace

int64_t cumsum_axis(const KernelContext& ctx) {
  Tensor t = ctx.in(1).to(Device::cpu()).contiguous();
  std::vector<int64_t> v;
  for (double d : t.to_doubles()) v.push_back(static_cast<int64_t>(d));
  return axis_value(v, t.shape(), ctx.in(0).rank());
}

PORTA_REGISTER_OP(CumSum) {
  OpSchema s;
  s.name = "CumSum";
  s.inputs = {"x", "axis"};
  s.outputs = {"y"};
  s.attrs = {attr_int("exclusive", 0), attr_int("reverse", 0)};
  s.host_inputs = {1};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats | kI32 | kI64);
    require_dtype(ctx, 1, kI32 | kI64);
    axis_value(ctx.int_values(1), ctx.shape(1), static_cast<int64_t>(ctx.shape(0).size()));
    ctx.set_output(0, ctx.shape(0), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    int64_t axis = cumsum_axis(ctx);
    bool exclusive = ctx.attrs->get_int("exclusive") != 0, reverse = ctx.attrs->get_int("reverse") != 0;
    auto [outer, n, inner] = split_at_axis(x.shape(), axis);
    const double* src = x.data<double>();
    double* dst = ctx.out(0).data<double>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        // Positions in summing order; an exclusive sum is written before adding its element.
        double sum = 0;
        for (int64_t s = 0; s < n; ++s) {
          int64_t j = reverse ? n - 1 - s : s;
          double v = src[(o * n + j) * inner + i];
          if (!exclusive) sum += v;
          dst[(o * n + j) * inner + i] = sum;
          if (exclusive) sum += v;
        }
      }
  };
  s.cases = [] {
    auto axis = [](double a) { return in_values({}, DType::i64, {a}); };
    auto axis1 = [](double a, DType t) { return in_values({1}, t, {a}); };
    auto attrs = [](int64_t exclusive, int64_t reverse) {
      return Attributes{{"exclusive", exclusive}, {"reverse", reverse}};
    };
    constexpr DTypeSet kData = kFloats | kI32 | kI64;
    std::vector<OpCase> c;
    c.push_back({"axis0_1d", {in({7}), axis(0)}, {}, kData});
    c.push_back({"axis1", {in({3, 9}), axis(1)}, {}, kF32 | kF16 | kI32});
    c.push_back({"exclusive", {in({3, 9}), axis(1)}, attrs(1, 0), kF32 | kI64});
    c.push_back({"reverse", {in({3, 9}), axis(1)}, attrs(0, 1), kF32 | kI32});
    c.push_back({"exclusive_reverse", {in({3, 9}), axis(1)}, attrs(1, 1), kF32 | kF16 | kI64});
    c.push_back({"axis0_3d", {in({5, 3, 4}), axis1(0, DType::i32)}, {}, kF32 | kBF16});
    c.push_back({"middle_axis_4d", {in({2, 6, 3, 5}), axis(1)}, attrs(0, 1), kF32 | kI32});
    c.push_back({"negative_axis", {in({2, 3, 7}), axis1(-1, DType::i64)}, attrs(1, 0), kF32 | kF64});
    c.push_back({"negative_axis_first", {in({4, 3, 2}), axis(-3)}, attrs(1, 1), kF32});
    c.push_back({"size1", {in({1}), axis(0)}, attrs(1, 0), kF32 | kI64});
    c.push_back({"empty", {in({0, 4}), axis(1)}, {}, kF32});
    c.push_back({"empty_axis", {in({3, 0}), axis(1)}, attrs(0, 1), kF32});
    // > 65536 elements: many short lines, and long lines past lavapipe's loop cap (the Vulkan
    // kernel splits them over dispatches).
    c.push_back({"large", {in({300, 241}), axis(1)}, {}, kF32 | kI32});
    c.push_back({"long_axis", {in({2, 70001}, -1, 1), axis(1)}, attrs(0, 1), kF32 | kI32 | kI64});
    c.push_back({"long_axis_inner", {in({70001, 2}, 0, 3), axis(0)}, attrs(1, 0), kI32});
    OpCase perf{"4096x4096_axis1", {in({4096, 4096}), axis(1)}, {}, kF32};
    perf.perf = true;
    c.push_back(perf);
    return c;
  };
  return s;
}

}  // namespace porta::opdef
