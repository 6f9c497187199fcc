// Logical ops on bool tensors: Not, And, Or (And/Or broadcast like NumPy).
#include "ops/elementwise_common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Not) {
  OpSchema s = ew::unary_schema("Not", kBool, [](double x, const Attributes&, DType) { return x == 0 ? 1.0 : 0.0; });
  s.cases = [] {
    auto c = ew::unary_cases(kBool, 0, {}, {}, {}, "", false);
    OpCase big{"4096x4096", {in_typed({4096, 4096}, DType::boolean)}, {}, kBool};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  return s;
}

namespace {
std::vector<OpCase> bool_binary_cases() { return ew::binary_cases(kBool, 0, {}, {}, {}, {}); }
}  // namespace

PORTA_REGISTER_OP(And) {
  OpSchema s = ew::binary_schema("And", kBool, [](double a, double b, DType) { return a != 0 && b != 0 ? 1.0 : 0.0; }, true);
  s.cases = bool_binary_cases;
  return s;
}

PORTA_REGISTER_OP(Or) {
  OpSchema s = ew::binary_schema("Or", kBool, [](double a, double b, DType) { return a != 0 || b != 0 ? 1.0 : 0.0; }, true);
  s.cases = bool_binary_cases;
  return s;
}

}  // namespace porta::opdef
