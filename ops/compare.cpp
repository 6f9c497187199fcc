// Equal, Less, Greater with broadcasting; output bool. Equal also takes bool inputs.
// Cases draw whole numbers from a small range so ties actually occur.
#include <cmath>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {
namespace {

std::vector<OpCase> compare_cases(DTypeSet extra) {
  ew::Range r{-3, 3, true};
  auto c = ew::binary_cases(kFloats, kInts | extra, r, r, r, r);
  c.push_back({"fractional", {ew::spec({4, 6}, {}), ew::spec({6}, {})}, {}, kF32 | kF64});
  c.push_back({"nan", {ew::fixed({3}, {NAN, 1, NAN}), ew::fixed({3}, {NAN, NAN, 1})}, {}, kFloats});
  return c;
}

}  // namespace

PORTA_REGISTER_OP(Equal) {
  OpSchema s = ew::binary_schema("Equal", kAllTypes, [](double a, double b, DType) { return a == b ? 1.0 : 0.0; }, true);
  s.cases = [] { return compare_cases(kBool); };
  return s;
}

PORTA_REGISTER_OP(Less) {
  OpSchema s = ew::binary_schema("Less", kNumeric, [](double a, double b, DType) { return a < b ? 1.0 : 0.0; }, true);
  s.cases = [] { return compare_cases(0); };
  return s;
}

PORTA_REGISTER_OP(Greater) {
  OpSchema s = ew::binary_schema("Greater", kNumeric, [](double a, double b, DType) { return a > b ? 1.0 : 0.0; }, true);
  s.cases = [] { return compare_cases(0); };
  return s;
}

}  // namespace porta::opdef
