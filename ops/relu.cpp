// Relu: y = max(x, 0).
#include <cmath>

#include "ops/common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Relu) {
  OpSchema s;
  s.name = "Relu";
  s.inputs = {"X"};
  s.outputs = {"Y"};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats | kI64 | kI32 | kI8);
    infer_same_as_input0(ctx);
  };
  s.reference = [](KernelContext& ctx) {
    const double* x = ctx.in(0).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < ctx.in(0).numel(); ++i) y[i] = x[i] > 0 ? x[i] : 0.0;
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"scalar", {in({})}, {}, kF32 | kF64});
    c.push_back({"empty", {in({0, 3})}, {}, kF32});
    c.push_back({"odd", {in({3, 5, 7})}, {}, kF32 | kF64 | kF16 | kBF16});
    c.push_back({"ints", {in({17}, -50, 50)}, {}, kI64 | kI32 | kI8});
    c.push_back({"ints_empty", {in({0, 3}, -50, 50)}, {}, kI64 | kI32 | kI8});
    c.push_back({"ints_rows", {in({33, 65}, -100, 100)}, {}, kI64 | kI32 | kI8});
    OpCase big{"4096x4096", {in({4096, 4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(1);
  return s;
}

}  // namespace porta::opdef
