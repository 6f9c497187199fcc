// Sub, Mul, Div with NumPy broadcasting on every numeric dtype.
// Integer results wrap (two's complement). Integer Div truncates toward zero (ONNX's reference
// divides then casts; ONNX Runtime uses C division); x / 0 is 0 for integers, so a bad
// denominator never traps, and INT_MIN / -1 wraps to INT_MIN. Float x / 0 is ±inf (0/0 NaN).
#include <cmath>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {
namespace {

using ew::Range;
const Range kIntRange{-100, 100, true};

}  // namespace

PORTA_REGISTER_OP(Sub) {
  OpSchema s = ew::binary_schema("Sub", kNumeric, [](double a, double b, DType) { return a - b; });
  s.cases = [] { return ew::binary_cases(kFloats, kInts, {}, {}, kIntRange, kIntRange); };
  return s;
}

PORTA_REGISTER_OP(Mul) {
  OpSchema s = ew::binary_schema("Mul", kNumeric, [](double a, double b, DType) { return a * b; });
  s.cases = [] { return ew::binary_cases(kFloats, kInts, {}, {}, kIntRange, kIntRange); };
  return s;
}

PORTA_REGISTER_OP(Div) {
  OpSchema s = ew::binary_schema("Div", kNumeric, [](double a, double b, DType t) {
    if (!is_integer(t)) return a / b;
    return b == 0 ? 0.0 : std::trunc(a / b);
  });
  s.cases = [] {
    auto c = ew::binary_cases(kFloats, kInts, {}, {0.5, 2.5}, kIntRange, {1, 9, true});
    c.push_back({"negative_denominator", {ew::spec({4, 6}, {}), ew::spec({6}, {-2.5, -0.5})}, {}, kFloats});
    // Float division by zero: ±inf, and NaN for 0/0.
    c.push_back({"by_zero", {ew::fixed({5}, {1, -1, 0, 2.5, 3}), ew::fixed({5}, {0, 0, 0, -0.0, 0})}, {}, kFloats});
    // Integer truncation toward zero, division by zero (defined as 0), MIN / -1.
    c.push_back({"ints_signs",
                 {ew::fixed({8}, {7, -7, 7, -7, 5, -5, -128, 0}), ew::fixed({8}, {2, 2, -2, -2, 0, 0, -1, 3})},
                 {}, kI64 | kI32 | kI8});
    c.push_back({"u8_by_zero", {ew::fixed({4}, {7, 255, 0, 200}), ew::fixed({4}, {2, 0, 0, 7})}, {}, kU8});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
