// Range: start, start+delta, ... up to (not including) limit; three scalars of one numeric
// dtype. Length max(ceil((limit - start) / delta), 0), computed exactly for integer dtypes;
// element i is start + i * delta (not a running sum, so errors do not accumulate).
#include <cmath>

#include "ops/common.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {
namespace {

int64_t range_length(const InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i)
    if (shape_numel(ctx.shape(i)) != 1)
      throw ShapeError(str("[Range] expected scalar ", ctx.op->inputs[i], ", got shape ", shape_str(ctx.shape(i))));
  if (is_integer(ctx.dtype(0))) {
    int64_t start = tensor_ints(ctx.value(0))[0], limit = tensor_ints(ctx.value(1))[0],
            delta = tensor_ints(ctx.value(2))[0];
    if (delta == 0) throw ShapeError("[Range] expected a nonzero delta, got 0");
    if (delta > 0) return limit > start ? (limit - start + delta - 1) / delta : 0;
    return start > limit ? (start - limit - delta - 1) / -delta : 0;
  }
  double start = ctx.value(0).to_doubles()[0], limit = ctx.value(1).to_doubles()[0],
         delta = ctx.value(2).to_doubles()[0];
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    throw ShapeError(str("[Range] expected finite start/limit and a nonzero finite delta, got ", start,
                         ", ", limit, ", ", delta));
  double n = std::ceil((limit - start) / delta);
  if (n > 1e12) throw ShapeError(str("[Range] expected a length below 1e12, got ", n));
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

}  // namespace

PORTA_REGISTER_OP(Range) {
  OpSchema s;
  s.name = "Range";
  s.inputs = {"start", "limit", "delta"};
  s.outputs = {"output"};
  s.host_inputs = {0, 1, 2};
  s.infer = [](InferContext& ctx) {
    require_same_dtype(ctx);
    require_dtype(ctx, 0, kNumeric);
    ctx.set_output(0, {range_length(ctx)}, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    double start = ctx.in(0).data<double>()[0], delta = ctx.in(2).data<double>()[0];
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < ctx.out(0).numel(); ++i) y[i] = start + static_cast<double>(i) * delta;
  };
  s.cases = [] {
    // Scalars in the case's dtype.
    auto v = [](double x) {
      InputSpec s;
      s.values = {x};
      return s;
    };
    std::vector<OpCase> c;
    c.push_back({"up", {v(1), v(11), v(3)}, {}, kNumeric});
    c.push_back({"down", {v(10), v(-4), v(-3)}, {}, kF32 | kF64 | kI64 | kI32 | kI8});
    c.push_back({"fractional", {v(-1.5), v(2.25), v(0.5)}, {}, kF32 | kF64});
    c.push_back({"empty", {v(5), v(5), v(1)}, {}, kF32 | kI64});
    c.push_back({"wrong_direction", {v(0), v(5), v(-1)}, {}, kF32 | kI32});
    c.push_back({"single", {v(3), v(4), v(7)}, {}, kF32 | kI64});
    // More elements than one workgroup of the GPU kernels.
    c.push_back({"long", {v(-3), v(2000), v(7)}, {}, kF32 | kI64 | kI32});
    c.push_back({"bytes", {v(1), v(127), v(1)}, {}, kI8 | kU8});
    c.push_back({"long_down", {v(100), v(-1000.5), v(-2.5)}, {}, kF32 | kF16 | kF64});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
