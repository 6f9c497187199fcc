// TopK (opset 11+): the K largest (largest = 1) or smallest (largest = 0) elements along `axis`
// and their i64 indices. Order (every backend): larger first when largest, smaller first
// otherwise; NaN counts as larger than every number, as in PyTorch (NaNs come first with
// largest = 1, last with largest = 0); equal values keep the lower index first (numpy's stable
// sort, ONNX's reference). sorted = 0 allows any order; porta returns the sorted one anyway.
// K (input 1, one i64 value, a host input) above the axis length is a ShapeError; K = 0 gives
// empty outputs.
#include <algorithm>
#include <limits>
#include <numeric>

#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(TopK) {
  OpSchema s;
  s.name = "TopK";
  s.inputs = {"X", "K"};
  s.outputs = {"Values", "Indices"};
  s.attrs = {attr_int("axis", -1), attr_int("largest", 1), attr_int("sorted", 1)};
  s.host_inputs = {1};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kNumeric);
    require_dtype(ctx, 1, kI64 | kI32);
    const Shape& x = ctx.shape(0);
    if (x.empty()) throw ShapeError("[TopK] expected X of rank >= 1, got a scalar");
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), static_cast<int64_t>(x.size()), "TopK");
    std::vector<int64_t> k = ctx.int_values(1);
    if (k.size() != 1)
      throw ShapeError(str("[TopK] expected K with one element, got shape ", shape_str(ctx.shape(1))));
    if (k[0] < 0) throw ShapeError(str("[TopK] expected K >= 0, got ", k[0]));
    if (k[0] > x[axis])
      throw ShapeError(str("[TopK] expected K <= ", x[axis], " (the length of axis ", axis, " of X ",
                           shape_str(x), "), got ", k[0]));
    Shape out = x;
    out[axis] = k[0];
    ctx.set_output(0, out, ctx.dtype(0));
    ctx.set_output(1, out, DType::i64);
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    Tensor &values = ctx.out(0), &indices = ctx.out(1);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "TopK");
    bool largest = ctx.attrs->get_int("largest") != 0;
    auto [outer, n, inner] = split_at_axis(x.shape(), axis);
    int64_t k = values.shape()[axis];
    const double* src = x.data<double>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return src[(o * n + j) * inner + i]; };
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), int64_t{0});
        std::sort(order.begin(), order.end(),
                  [&](int64_t a, int64_t b) { return topk_before(at(a), a, at(b), b, largest); });
        for (int64_t j = 0; j < k; ++j) {
          values.data<double>()[(o * k + j) * inner + i] = at(order[j]);
          indices.data<double>()[(o * k + j) * inner + i] = static_cast<double>(order[j]);
        }
      }
  };
  s.cases = [] {
    auto K = [](double k) { return in_values({1}, DType::i64, {k}); };
    auto ints = [](Shape shape, double lo, double hi) {  // integer values (ties) in any dtype
      InputSpec spec = in(std::move(shape), lo, hi);
      spec.integers = true;
      return spec;
    };
    auto fixed = [](Shape shape, std::vector<double> v) {  // fixed values in the case's dtype
      InputSpec spec;
      spec.shape = std::move(shape);
      spec.values = std::move(v);
      return spec;
    };
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Attributes smallest{{"largest", int64_t{0}}};
    std::vector<OpCase> c;
    c.push_back({"k3", {in({4, 9}), K(3)}, {}, kFloats | kI32 | kI64, 2});
    c.push_back({"smallest_axis1", {in({3, 7, 5}), K(2)}, {{"axis", int64_t{1}}, {"largest", int64_t{0}}},
                 kF32 | kF16 | kI64, 2});
    c.push_back({"negative_axis_k_all", {in({2, 3, 6, 4}), K(6)}, {{"axis", int64_t{-2}}}, kF32 | kI32, 2});
    c.push_back({"axis0_3d", {in({5, 3, 4}), K(2)}, {{"axis", int64_t{0}}}, kF32, 2});
    c.push_back({"unsorted", {in({5, 8}), K(4)}, {{"sorted", int64_t{0}}}, kF32, 2});
    c.push_back({"unsorted_smallest", {in({5, 8}), K(4)}, {{"sorted", int64_t{0}}, {"largest", int64_t{0}}}, kF32, 2});
    // Integer values tie often: the lower index must come first on every backend.
    c.push_back({"ties", {ints({4, 13}, -1, 1), K(5)}, {}, kF32 | kF16 | kBF16 | kI32 | kI64 | kI8, 2});
    c.push_back({"ties_smallest", {ints({4, 13}, 0, 2), K(5)}, smallest, kF32 | kF64 | kI32 | kU8, 2});
    c.push_back({"ties_inner", {ints({3, 11, 4}, -1, 1), K(7)}, {{"axis", int64_t{1}}}, kF32 | kI64, 2});
    std::vector<double> with_nan = {1, nan, 3, nan, -1, 3, nan, 0, 2, 2, -5, 7};
    c.push_back({"nan", {fixed({2, 6}, with_nan), K(4)}, {}, kFloats, 2});
    c.push_back({"nan_smallest", {fixed({2, 6}, with_nan), K(5)}, smallest, kF32 | kF16, 2});
    c.push_back({"nan_axis0", {fixed({6, 2}, with_nan), K(6)}, {{"axis", int64_t{0}}}, kF32, 2});
    c.push_back({"k0", {in({3, 4}), K(0)}, {}, kF32 | kI64, 2});
    c.push_back({"size1", {in({1}), K(1)}, {}, kF32 | kI32, 2});
    c.push_back({"empty_rows", {in({0, 5}), K(2)}, {}, kF32, 2});
    c.push_back({"odd", {in({7, 1, 3}), K(1)}, {{"axis", int64_t{2}}}, kF32 | kF16, 2});
    // > 65536 elements: many rows (the grids span x and y), and one row longer than the
    // driver's loop cap of lavapipe (the Vulkan kernel declines it: CPU fallback).
    c.push_back({"large", {in({300, 241}), K(5)}, {}, kF32 | kI32, 2});
    c.push_back({"long_axis", {in({1, 70001}), K(4)}, {}, kF32, 2});
    OpCase perf{"2048x4096_k8", {in({2048, 4096}), K(8)}, {}, kF32, 2};
    perf.perf = true;
    c.push_back(perf);
    return c;
  };
  return s;
}

}  // namespace porta::opdef
