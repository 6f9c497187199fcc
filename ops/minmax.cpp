// Max and Min (opset 13): variadic (1 or more inputs of one numeric dtype), broadcasting all
// inputs together. NaN propagates (as in PyTorch's maximum/minimum and numpy.maximum).
#include <cmath>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {
namespace {

OpSchema minmax_schema(std::string name, bool is_max) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = {"data_0..."};
  s.outputs = {is_max ? "max" : "min"};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kNumeric);
    require_same_dtype(ctx);
    infer_broadcast(ctx);
  };
  s.reference = [is_max](KernelContext& ctx) {
    Tensor& out = ctx.out(0);
    double* po = out.data<double>();
    for (size_t k = 0; k < ctx.inputs.size(); ++k) {
      Tensor v = ctx.in(k).expand(out.shape()).contiguous();
      const double* pv = v.data<double>();
      for (int64_t i = 0; i < out.numel(); ++i) {
        if (k == 0 || std::isnan(pv[i])) po[i] = pv[i];
        else if (!std::isnan(po[i])) po[i] = is_max ? std::max(po[i], pv[i]) : std::min(po[i], pv[i]);
      }
    }
  };
  s.cases = [] {
    using ew::spec;
    auto c = ew::binary_cases(kFloats, kInts, {}, {}, {-100, 100, true}, {-100, 100, true});
    c.push_back({"single", {spec({3, 5}, {})}, {}, kFloats | kInts});
    c.push_back({"three", {spec({2, 1, 5}, {}), spec({3, 1}, {}), spec({5}, {})}, {}, kFloats | kInts});
    c.push_back({"four_scalar_last", {spec({4, 3}, {}), spec({4, 3}, {}), spec({3}, {}), spec({}, {})}, {}, kF32 | kI64});
    c.push_back({"nan", {ew::fixed({4}, {NAN, 1, NAN, -2}), ew::fixed({4}, {0, NAN, NAN, 3})}, {}, kFloats});
    return c;
  };
  s.flops = [](const std::vector<Shape>& in, const std::vector<Shape>& out, const Attributes&) {
    return out.empty() ? 0.0 : static_cast<double>(in.size() - 1) * static_cast<double>(shape_numel(out[0]));
  };
  return s;
}

}  // namespace

PORTA_REGISTER_OP(Max) { return minmax_schema("Max", true); }
PORTA_REGISTER_OP(Min) { return minmax_schema("Min", false); }

}  // namespace porta::opdef
