// Add: c = a + b with NumPy broadcasting.
#include "ops/common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Add) {
  OpSchema s;
  s.name = "Add";
  s.inputs = {"A", "B"};
  s.outputs = {"C"};
  s.infer = [](InferContext& ctx) {
    require_same_dtype(ctx);
    require_dtype(ctx, 0, kNumeric);
    infer_broadcast(ctx);
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& c = ctx.out(0);
    Tensor a = ctx.in(0).expand(c.shape()).contiguous(), b = ctx.in(1).expand(c.shape()).contiguous();
    const double *pa = a.data<double>(), *pb = b.data<double>();
    double* pc = c.data<double>();
    for (int64_t i = 0; i < c.numel(); ++i) pc[i] = pa[i] + pb[i];
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"same", {in({3, 5}), in({3, 5})}, {}, kF32 | kF64 | kF16 | kBF16 | kI64 | kI32});
    c.push_back({"broadcast_row", {in({4, 7}), in({7})}, {}, kF32 | kF64});
    c.push_back({"broadcast_both", {in({2, 1, 5}), in({3, 1})}, {}, kF32});
    c.push_back({"scalar", {in({}), in({6})}, {}, kF32});
    c.push_back({"empty", {in({0, 4}), in({4})}, {}, kF32});
    OpCase big{"4096x4096", {in({4096, 4096}), in({4096, 4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(1);
  return s;
}

}  // namespace porta::opdef
