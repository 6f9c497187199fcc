// The variadic elementwise ops (opset 13): Max and Min over every numeric dtype, Sum and Mean
// over the float dtypes; 1 or more inputs of one dtype, broadcast together. NaN propagates
// (as in PyTorch's maximum/minimum and numpy.maximum). Sum adds in input order; Mean is that
// sum divided by the number of inputs.
#include <algorithm>
#include <cmath>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {
namespace {

// `combine(acc, v)` folds input k > 0 into the running value; `finish(acc, n)` ends it.
using Combine = double (*)(double, double);
using Finish = double (*)(double, size_t);

OpSchema variadic_schema(std::string name, std::string output, DTypeSet allowed, Combine combine, Finish finish) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = {"data_0..."};
  s.outputs = {std::move(output)};
  s.infer = [allowed](InferContext& ctx) {
    require_dtype(ctx, 0, allowed);
    require_same_dtype(ctx);
    infer_broadcast(ctx);
  };
  s.reference = [combine, finish](KernelContext& ctx) {
    Tensor& out = ctx.out(0);
    double* po = out.data<double>();
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      Tensor v = ctx.in(k).expand(out.shape()).contiguous();
      const double* pv = v.data<double>();
      for (int64_t i = 0; i < out.numel(); ++i) po[i] = k == 0 ? pv[i] : combine(po[i], pv[i]);
    }
    for (int64_t i = 0; i < out.numel(); ++i) po[i] = finish(po[i], ctx.inputs.size());
  };
  s.cases = [allowed] {
    using ew::spec;
    DTypeSet ints = allowed & kInts;
    auto c = ew::binary_cases(kFloats, ints, {}, {}, {-100, 100, true}, {-100, 100, true});
    c.push_back({"single", {spec({3, 5}, {})}, {}, allowed});
    c.push_back({"three", {spec({2, 1, 5}, {}), spec({3, 1}, {}), spec({5}, {})}, {}, allowed});
    c.push_back({"four_scalar_last", {spec({4, 3}, {}), spec({4, 3}, {}), spec({3}, {}), spec({}, {})}, {},
                 kF32 | (allowed & kI64)});
    c.push_back({"nan", {ew::fixed({4}, {NAN, 1, NAN, -2}), ew::fixed({4}, {0, NAN, NAN, 3})}, {}, kFloats});
    return c;
  };
  s.flops = [](const std::vector<Shape>& in, const std::vector<Shape>& out, const Attributes&) {
    return out.empty() ? 0.0 : static_cast<double>(in.size() - 1) * static_cast<double>(shape_numel(out[0]));
  };
  return s;
}

double keep(double v, size_t) { return v; }

}  // namespace

PORTA_REGISTER_OP(Max) {
  return variadic_schema("Max", "max", kNumeric,
                         [](double a, double v) { return std::isnan(a) || std::isnan(v) ? a + v : std::max(a, v); }, keep);
}
PORTA_REGISTER_OP(Min) {
  return variadic_schema("Min", "min", kNumeric,
                         [](double a, double v) { return std::isnan(a) || std::isnan(v) ? a + v : std::min(a, v); }, keep);
}
PORTA_REGISTER_OP(Sum) {
  return variadic_schema("Sum", "sum", kFloats, [](double a, double v) { return a + v; }, keep);
}
PORTA_REGISTER_OP(Mean) {
  return variadic_schema("Mean", "mean", kFloats, [](double a, double v) { return a + v; },
                         [](double a, size_t n) { return a / static_cast<double>(n); });
}

}  // namespace porta::opdef
