// Clip (opset 13): y = min(max(x, min), max) with optional scalar inputs "min" and "max" of
// x's dtype. An absent bound does not clip. When min > max every element becomes max (the
// order of the two comparisons, as in ONNX's reference and PyTorch's clamp). NaN stays NaN.
#include <cmath>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Clip) {
  OpSchema s;
  s.name = "Clip";
  s.inputs = {"input", "min?", "max?"};
  s.host_read_inputs = {1, 2};
  s.outputs = {"output"};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kNumeric);
    require_same_dtype(ctx, "input, min and max");
    for (size_t i = 1; i < 3; ++i)
      if (ctx.has_input(i) && shape_numel(ctx.shape(i)) != 1)
        throw ShapeError(str("[Clip] ", i == 1 ? "min" : "max", " must be a scalar, got shape ",
                             shape_str(ctx.shape(i)), " (input is ", shape_str(ctx.shape(0)), ")"));
    infer_same_as_input0(ctx);
  };
  s.reference = [](KernelContext& ctx) {
    bool has_lo = ctx.has_input(1), has_hi = ctx.has_input(2);
    double lo = has_lo ? ctx.in(1).data<double>()[0] : 0, hi = has_hi ? ctx.in(2).data<double>()[0] : 0;
    const double* x = ctx.in(0).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < ctx.out(0).numel(); ++i) {
      double v = x[i];
      if (has_lo && v < lo) v = lo;
      if (has_hi && v > hi) v = hi;
      y[i] = v;
    }
  };
  s.cases = [] {
    using ew::fixed;
    using ew::spec;
    std::vector<OpCase> c;
    ew::Range r{-3, 3};
    c.push_back({"both", {spec({3, 5, 7}, r), fixed({}, {-1}), fixed({}, {1.5})}, {}, kFloats});
    c.push_back({"min_only", {spec({33, 65}, r), fixed({}, {-0.5})}, {}, kFloats});
    c.push_back({"max_only", {spec({33, 65}, r), in_absent(), fixed({}, {0.25})}, {}, kFloats});
    c.push_back({"none", {spec({4, 6}, r)}, {}, kFloats});
    c.push_back({"min_above_max", {spec({17}, r), fixed({}, {1}), fixed({}, {-1})}, {}, kF32 | kF64});
    c.push_back({"bounds_shape_1", {spec({5, 3}, r), fixed({1}, {-1}), fixed({1}, {1})}, {}, kF32});
    c.push_back({"scalar", {spec({}, r), fixed({}, {-1}), fixed({}, {1})}, {}, kF32 | kF16});
    c.push_back({"empty", {spec({0, 3}, r), fixed({}, {-1}), fixed({}, {1})}, {}, kF32});
    c.push_back({"one", {spec({1}, r), fixed({}, {-1}), fixed({}, {1})}, {}, kF32 | kBF16});
    c.push_back({"ints", {spec({3, 5, 7}, {-100, 100, true}), fixed({}, {5}), fixed({}, {60})}, {}, kInts});
    c.push_back({"ints_max_only", {spec({9}, {-100, 100, true}), in_absent(), fixed({}, {7})}, {}, kInts});
    OpCase big{"4096x4096", {spec({4096, 4096}, r), fixed({}, {-1}), fixed({}, {1})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(2);
  return s;
}

}  // namespace porta::opdef
