// GlobalAveragePool and GlobalMaxPool: the mean / max over all spatial axes of X
// (N x C x spatial...), kept as size-1 axes: N x C x 1 x ... x 1.
#include <cmath>

#include "ops/common.hpp"

namespace porta::opdef {
namespace {

void infer_global(InferContext& ctx) {
  require_dtype(ctx, 0, kFloats);
  const Shape& x = ctx.shape(0);
  if (x.size() < 3) throw ShapeError(str("[", ctx.op->name, "] X must be N x C x spatial..., got ", shape_str(x)));
  for (size_t i = 2; i < x.size(); ++i)
    if (x[i] == 0)
      throw ShapeError(str("[", ctx.op->name, "] spatial axes must be non-empty, got X ", shape_str(x)));
  Shape y(x.size(), 1);
  y[0] = x[0];
  y[1] = x[1];
  ctx.set_output(0, y, ctx.dtype(0));
}

void reference_global(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  int64_t planes = x.dim(0) * x.dim(1), inner = planes == 0 ? 0 : x.numel() / planes;
  const double* px = x.data<double>();
  double* y = ctx.out(0).data<double>();
  for (int64_t p = 0; p < planes; ++p) {
    double acc = max ? -INFINITY : 0.0;
    for (int64_t j = 0; j < inner; ++j) acc = max ? std::max(acc, px[p * inner + j]) : acc + px[p * inner + j];
    y[p] = max ? acc : acc / static_cast<double>(inner);
  }
}

OpSchema global_schema(const char* name, bool max) {
  OpSchema s;
  s.name = name;
  s.inputs = {"X"};
  s.outputs = {"Y"};
  s.infer = infer_global;
  s.reference = [max](KernelContext& ctx) { reference_global(ctx, max); };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"nchw", {in({2, 3, 7, 5})}, {}, kF32 | kF64});
    c.push_back({"ncw", {in({3, 4, 9})}, {}, kF32 | kF64});
    c.push_back({"ncdhw", {in({1, 2, 3, 4, 5})}, {}, kF32});
    c.push_back({"1x1", {in({1, 1, 1, 1})}, {}, kF32 | kF64});
    c.push_back({"empty_batch", {in({0, 3, 4, 4})}, {}, kF32});
    OpCase big{"n32_c256_28x28", {in({32, 256, 28, 28})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>&, const Attributes&) {
    return static_cast<double>(shape_numel(ins[0]));
  };
  return s;
}

}  // namespace

PORTA_REGISTER_OP(GlobalAveragePool) { return global_schema("GlobalAveragePool", false); }
PORTA_REGISTER_OP(GlobalMaxPool) { return global_schema("GlobalMaxPool", true); }

}  // namespace porta::opdef
