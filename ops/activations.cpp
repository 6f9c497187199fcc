// LeakyRelu (alpha = 0.01) and Elu (alpha = 1.0): float ops with one attribute.
#include <cmath>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(LeakyRelu) {
  OpSchema s = ew::unary_schema("LeakyRelu", kFloats, [](double x, const Attributes& a, DType) {
    return x >= 0 ? x : a.get_float("alpha") * x;
  });
  s.attrs = {attr_float("alpha", 0.01)};
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-3, 3}, {});
    for (auto& v : ew::unary_cases(kFloats, 0, {-3, 3}, {}, {{"alpha", 0.2}}, "_alpha0.2", false))
      c.push_back(v);
    c.push_back({"alpha_negative", {ew::spec({3, 5, 7}, {-3, 3})}, {{"alpha", -1.5}}, kF32 | kF64});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Elu) {
  OpSchema s = ew::unary_schema("Elu", kFloats, [](double x, const Attributes& a, DType) {
    return x > 0 ? x : a.get_float("alpha") * (std::exp(x) - 1.0);
  });
  s.attrs = {attr_float("alpha", 1.0)};
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-4, 3}, {});
    for (auto& v : ew::unary_cases(kFloats, 0, {-4, 3}, {}, {{"alpha", 0.5}}, "_alpha0.5", false))
      c.push_back(v);
    return c;
  };
  return s;
}

}  // namespace porta::opdef
