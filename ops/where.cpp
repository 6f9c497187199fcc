// Where(condition, X, Y): X where condition is true, else Y; the three inputs broadcast
// together. condition is bool; X and Y share any dtype, which selects the kernel
// (dispatch_input 1).
#include "ops/elementwise_common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Where) {
  OpSchema s;
  s.name = "Where";
  s.inputs = {"condition", "X", "Y"};
  s.outputs = {"output"};
  s.dispatch_input = 1;
  s.infer = [](InferContext& ctx) {
    if (ctx.dtype(0) != DType::boolean)
      throw DTypeError(str("[Where] condition must be bool, got ", dtype_name(ctx.dtype(0)),
                           " (X is ", dtype_name(ctx.dtype(1)), ")"));
    if (ctx.dtype(1) != ctx.dtype(2))
      throw DTypeError(str("[Where] X and Y must share one dtype: X is ", dtype_name(ctx.dtype(1)),
                           ", Y is ", dtype_name(ctx.dtype(2))));
    Shape out = broadcast_shapes(broadcast_shapes(ctx.shape(0), ctx.shape(1), "Where"), ctx.shape(2), "Where");
    ctx.set_output(0, out, ctx.dtype(1));
  };
  s.reference = [](KernelContext& ctx) {
    Tensor& out = ctx.out(0);
    Tensor c = ctx.in(0).expand(out.shape()).contiguous();
    Tensor x = ctx.in(1).expand(out.shape()).contiguous();
    Tensor y = ctx.in(2).expand(out.shape()).contiguous();
    const double *pc = c.data<double>(), *px = x.data<double>(), *py = y.data<double>();
    double* po = out.data<double>();
    for (int64_t i = 0; i < out.numel(); ++i) po[i] = pc[i] != 0 ? px[i] : py[i];
  };
  s.cases = [] {
    auto cond = [](Shape s) { return in_typed(std::move(s), DType::boolean); };
    std::vector<OpCase> c;
    c.push_back({"same", {cond({3, 5, 7}), in({3, 5, 7}, -100, 100), in({3, 5, 7}, -100, 100)}, {}, kAllTypes});
    c.push_back({"cond_row", {cond({7}), in({4, 7}), in({4, 7})}, {}, kF32 | kI64});
    c.push_back({"three_way", {cond({2, 1, 1}), in({3, 1}), in({1, 5})}, {}, kFloats | kI32 | kBool});
    c.push_back({"scalar_y", {cond({4, 6}), in({4, 6}), in({})}, {}, kF32 | kI64});
    c.push_back({"scalar_cond", {cond({}), in({4, 6}), in({6})}, {}, kF32});
    c.push_back({"scalars", {cond({}), in({}), in({})}, {}, kF32});
    c.push_back({"empty", {cond({0, 3}), in({3}), in({1})}, {}, kF32});
    c.push_back({"one", {cond({1}), in({1}), in({1})}, {}, kF16});
    OpCase big{"4096x4096", {cond({4096, 4096}), in({4096, 4096}), in({4096, 4096})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(0);
  return s;
}

}  // namespace porta::opdef
