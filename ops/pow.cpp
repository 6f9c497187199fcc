// Pow (opset 15): Z = X ^ Y with broadcasting. X (and Z) is f32/f64/f16/bf16/i32/i64; Y may be
// any numeric dtype (ONNX's T1), not necessarily X's.
// - float X: pow computed in double for the reference, in X's compute type (float for
//   f16/bf16) or double when Y's dtype differs;
// - integer X, integer Y: exact integer power, wrapping on overflow; a negative exponent gives
//   the truncated real result (1 for X = 1, ±1 for X = -1, else 0; also 0 for X = 0);
// - integer X, float Y: pow in double, then truncated toward zero (NaN -> 0, out of range
//   saturates to the i64 range then wraps), the same rule as Cast.
#include <cmath>
#include <limits>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {
namespace {

constexpr DTypeSet kPowBase = kFloats | kI32 | kI64;

double float_to_int(double v, DType t) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  v = std::min(std::max(v, -9223372036854775808.0), 9223372036854775807.0);
  return ew::wrap_to(v, t);
}

// Repeated multiplication, wrapping into t after each step: exact in double while
// |a| * |partial result| stays below 2^53 (i32 with |a| < 2^22; the i64 cases stay small).
double int_pow(double a, double e, DType t) {
  if (e < 0) {
    if (a == 1) return 1;
    if (a == -1) return std::fmod(e, 2) == 0 ? 1 : -1;
    return 0;
  }
  double r = 1;
  for (double k = 0; k < e; ++k) r = ew::wrap_to(r * a, t);
  return r;
}

}  // namespace

PORTA_REGISTER_OP(Pow) {
  OpSchema s;
  s.name = "Pow";
  s.inputs = {"X", "Y"};
  s.outputs = {"Z"};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kPowBase);
    require_dtype(ctx, 1, kNumeric);
    infer_broadcast(ctx);
  };
  s.reference = [](KernelContext& ctx) {
    DType tx = ctx.source_dtypes.at(0), ty = ctx.source_dtypes.at(1);
    const Tensor& z = ctx.out(0);
    Tensor x = ctx.in(0).expand(z.shape()).contiguous(), y = ctx.in(1).expand(z.shape()).contiguous();
    const double *px = x.data<double>(), *py = y.data<double>();
    double* pz = z.data<double>();
    for (int64_t i = 0; i < z.numel(); ++i) {
      if (!is_integer(tx)) pz[i] = std::pow(px[i], py[i]);
      else if (is_integer(ty)) pz[i] = int_pow(px[i], py[i], tx);
      else pz[i] = float_to_int(std::pow(px[i], py[i]), tx);
    }
  };
  s.cases = [] {
    using ew::fixed;
    using ew::spec;
    auto c = ew::binary_cases(kFloats, kI32 | kI64, {0.1, 3}, {-2, 2}, {-6, 6, true}, {0, 5, true});
    c.push_back({"negative_base_int_exponent", {spec({4, 5}, {-3, -0.1}), spec({5}, {-3, 3, true})}, {}, kFloats});
    c.push_back({"square", {spec({3, 5, 7}, {}), fixed({}, {2})}, {}, kFloats});
    c.push_back({"sqrt", {spec({3, 5, 7}, {0, 4}), fixed({}, {0.5})}, {}, kFloats});
    c.push_back({"ints_wrap", {spec({12}, {-1000, 1000, true}), spec({12}, {0, 9, true})}, {}, kI32});
    c.push_back({"ints_negative_exponent",
                 {fixed({6}, {1, -1, -1, 2, 0, -3}), fixed({6}, {-3, -3, -2, -1, -2, -1})}, {}, kI32 | kI64});
    // Exponent of another dtype than the base.
    c.push_back({"f32_base_i64_exponent",
                 {spec({4, 5}, {-3, 3}), in_typed({5}, DType::i64, -3, 3)}, {}, kF32 | kF64});
    // f16 overflows (65504) for bases near 0 with exponent -3: keep |base| >= 0.5.
    c.push_back({"f16_base_i64_exponent",
                 {spec({4, 5}, {-3, -0.5}), in_typed({5}, DType::i64, -3, 3)}, {}, kF16});
    c.push_back({"f16_base_f32_exponent",
                 {spec({4, 5}, {0.1, 3}), in_typed({5}, DType::f32, -2, 2)}, {}, kF16 | kBF16});
    c.push_back({"i32_base_i8_exponent",
                 {spec({4, 5}, {-6, 6, true}), in_typed({5}, DType::i8, 0, 4)}, {}, kI32 | kI64});
    c.push_back({"i64_base_f32_exponent",
                 {spec({4, 5}, {0, 9, true}), in_typed({5}, DType::f32, 0, 2)}, {}, kI64 | kI32});
    return c;
  };
  s.flops = flops_per_output_element(1);
  return s;
}

}  // namespace porta::opdef
