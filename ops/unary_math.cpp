// Unary math ops: Abs Neg Sign Exp Log Sqrt Reciprocal Tanh Sigmoid Erf Sin Cos Tan Floor Ceil Round.
// Float ops run on f32/f64/f16/bf16; Abs also on every integer type and Neg on signed ones
// (integer results wrap: Abs(-128 as i8) is -128, as in C and numpy).
#include <cmath>

#include "ops/elementwise_common.hpp"
#include "ops/fused_activation.hpp"

namespace porta::opdef {
namespace {

using ew::Range;

OpSchema float_unary(std::string name, double (*f)(double), Range r) {
  OpSchema s = ew::unary_schema(std::move(name), kFloats,
                                [f](double x, const Attributes&, DType) { return f(x); });
  s.cases = [r] { return ew::unary_cases(kFloats, 0, r, {}); };
  return s;
}

double sigmoid(double x) { return act::sigmoid(x); }  // shared with Conv's fused activations
double reciprocal(double x) { return 1.0 / x; }
double exp_(double x) { return std::exp(x); }
double log_(double x) { return std::log(x); }
double sqrt_(double x) { return std::sqrt(x); }
double tanh_(double x) { return std::tanh(x); }
double erf_(double x) { return std::erf(x); }
double sin_(double x) { return std::sin(x); }
double cos_(double x) { return std::cos(x); }
double tan_(double x) { return std::tan(x); }
double floor_(double x) { return std::floor(x); }
double ceil_(double x) { return std::ceil(x); }

}  // namespace

PORTA_REGISTER_OP(Abs) {
  OpSchema s = ew::unary_schema("Abs", kNumeric, [](double x, const Attributes&, DType) { return std::abs(x); });
  s.cases = [] { return ew::unary_cases(kFloats, kInts, {}, {-100, 100, true}); };
  return s;
}

PORTA_REGISTER_OP(Neg) {
  OpSchema s = ew::unary_schema("Neg", kFloats | kI64 | kI32 | kI8,
                                [](double x, const Attributes&, DType) { return -x; });
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, kI64 | kI32 | kI8, {}, {-100, 100, true});
    // -(-128) wraps to -128 in i8.
    c.push_back({"i8_min", {ew::fixed({3}, {-128, 127, 0})}, {}, kI8});
    return c;
  };
  return s;
}

// Sign on every numeric dtype: -1, 0 or 1 (NaN stays NaN, as in numpy).
PORTA_REGISTER_OP(Sign) {
  OpSchema s = ew::unary_schema("Sign", kNumeric, [](double x, const Attributes&, DType) {
    return std::isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
  });
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, kInts, {-3, 3}, {-100, 100, true}, {}, "", false);
    c.push_back({"zeros_nan", {ew::fixed({5}, {0.0, -0.0, NAN, -INFINITY, 1e-30})}, {}, kF32 | kF64});
    c.push_back({"ints_edges", {ew::fixed({4}, {-128, 127, 0, -1})}, {}, kI8 | kI32 | kI64});
    return c;
  };
  return s;
}

// Round: to the nearest integer, halves to even (numpy.round, ONNX Round).
PORTA_REGISTER_OP(Round) {
  OpSchema s = ew::unary_schema("Round", kFloats, [](double x, const Attributes&, DType) { return std::nearbyint(x); });
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-10, 10}, {}, {}, "", false);
    c.push_back({"halves", {ew::fixed({8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, 3.5000001})}, {}, kFloats});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Tan) {
  OpSchema s = float_unary("Tan", tan_, {-1.4, 1.4});
  s.cases = [] { return ew::unary_cases(kFloats, 0, {-1.4, 1.4}, {}, {}, "", false); };
  return s;
}

PORTA_REGISTER_OP(Exp) { return float_unary("Exp", exp_, {-5, 5}); }
PORTA_REGISTER_OP(Log) { return float_unary("Log", log_, {0.01, 10}); }
PORTA_REGISTER_OP(Sqrt) { return float_unary("Sqrt", sqrt_, {0, 10}); }
PORTA_REGISTER_OP(Tanh) { return float_unary("Tanh", tanh_, {-4, 4}); }
PORTA_REGISTER_OP(Sigmoid) { return float_unary("Sigmoid", sigmoid, {-8, 8}); }
PORTA_REGISTER_OP(Erf) { return float_unary("Erf", erf_, {-3, 3}); }
PORTA_REGISTER_OP(Sin) { return float_unary("Sin", sin_, {-7, 7}); }
PORTA_REGISTER_OP(Cos) { return float_unary("Cos", cos_, {-7, 7}); }
PORTA_REGISTER_OP(Floor) { return float_unary("Floor", floor_, {-10, 10}); }
PORTA_REGISTER_OP(Ceil) { return float_unary("Ceil", ceil_, {-10, 10}); }

PORTA_REGISTER_OP(Reciprocal) {
  OpSchema s = float_unary("Reciprocal", reciprocal, {0.25, 4});
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {0.25, 4}, {});
    c.push_back({"negative", {ew::spec({5, 3}, {-4, -0.25})}, {}, kFloats});
    c.push_back({"zero", {ew::fixed({3}, {0.0, -0.0, 2.0})}, {}, kFloats});  // 1/±0 = ±inf
    return c;
  };
  return s;
}

}  // namespace porta::opdef
