// Sub, Mul, Div, Mod with NumPy broadcasting on every numeric dtype, and PRelu on floats.
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

// Mod: fmod = 1 is C's fmod (the result has the dividend's sign), fmod = 0 the floored
// remainder of Python and numpy.mod (the divisor's sign). ONNX defines fmod = 0 for integers;
// for floats it is numpy.mod here too, as in ONNX's reference implementation. An integer x mod 0
// is 0 (never a trap), MIN mod -1 is 0; a float x mod 0 is NaN.
namespace {

double mod_ref(double a, double b, const Attributes& attrs, DType t) {
  bool c_style = attrs.get_int("fmod") != 0;
  if (is_integer(t) && b == 0) return 0.0;
  double r = std::fmod(a, b);
  if (!c_style && r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace

PORTA_REGISTER_OP(Mod) {
  OpSchema s = ew::binary_schema_with_attrs("Mod", kNumeric, mod_ref);
  s.attrs = {attr_int("fmod", 0)};
  s.infer = [base = s.infer](InferContext& ctx) {
    int64_t fmod = ctx.attrs->get_int("fmod");
    if (fmod != 0 && fmod != 1) throw InvalidArgument(str("[Mod] expected fmod 0 or 1, got ", fmod));
    base(ctx);
  };
  s.cases = [] {
    Attributes c_style{{"fmod", int64_t{1}}};
    std::vector<OpCase> c;
    for (Attributes a : {Attributes{}, c_style}) {
      std::string suffix = a.has("fmod") ? "_fmod1" : "_fmod0";
      c.push_back({"same" + suffix, {ew::spec({3, 5, 7}, {-9, 9}), ew::spec({3, 5, 7}, {0.5, 4})}, a, kFloats});
      c.push_back({"negative_divisor" + suffix, {ew::spec({4, 6}, {-9, 9}), ew::spec({6}, {-4, -0.5})}, a, kFloats});
      c.push_back({"scalar" + suffix, {ew::spec({}, {-9, 9}), ew::spec({}, {0.5, 4})}, a, kFloats});
      c.push_back({"empty" + suffix, {ew::spec({0, 4}, {}), ew::spec({4}, {1, 2})}, a, kFloats | kInts});
      c.push_back({"ints" + suffix, {ew::spec({5, 7}, {-100, 100, true}), ew::spec({7}, {1, 9, true})}, a, kInts});
      c.push_back({"ints_signs" + suffix,
                   {ew::fixed({8}, {7, -7, 7, -7, 5, -5, -128, 0}), ew::fixed({8}, {3, 3, -3, -3, 0, 0, -1, 3})}, a,
                   kI64 | kI32 | kI8});
      c.push_back({"u8" + suffix, {ew::fixed({4}, {7, 255, 0, 200}), ew::fixed({4}, {2, 0, 9, 7})}, a, kU8});
    }
    return c;
  };
  return s;
}

// PRelu: x where x >= 0, slope * x elsewhere; slope broadcasts to X (output has X's shape).
PORTA_REGISTER_OP(PRelu) {
  OpSchema s = ew::binary_schema("PRelu", kFloats, [](double x, double slope, DType) { return x < 0 ? slope * x : x; });
  s.inputs = {"X", "slope"};
  s.outputs = {"Y"};
  s.infer = [base = s.infer](InferContext& ctx) {
    base(ctx);
    if (ctx.outputs.at(0).shape != ctx.shape(0))
      throw ShapeError(str("[PRelu] expected slope to broadcast to X ", shape_str(ctx.shape(0)), ", got slope ",
                           shape_str(ctx.shape(1))));
  };
  s.cases = [] {
    std::vector<OpCase> c;
    // torch.nn.PReLU(C) exports a slope of shape [C, 1, 1] for NCHW input; PReLU() a single one.
    c.push_back({"channels", {ew::spec({2, 3, 4, 5}, {-3, 3}), ew::spec({3, 1, 1}, {0, 0.5})}, {}, kFloats});
    c.push_back({"single_slope", {ew::spec({3, 5, 7}, {-3, 3}), ew::spec({1}, {0, 0.5})}, {}, kFloats});
    c.push_back({"same_shape", {ew::spec({4, 6}, {-3, 3}), ew::spec({4, 6}, {-1, 1})}, {}, kFloats});
    c.push_back({"empty", {ew::spec({0, 3}, {}), ew::spec({3}, {})}, {}, kFloats});
    c.push_back({"nan", {ew::fixed({3}, {NAN, -1, 1}), ew::fixed({1}, {0.25})}, {}, kF32 | kF64});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
