// Unary math ops on cpu. f32 transcendental ops go through oneDNN's vectorized eltwise (plain
// libm loops do not vectorize); the rest are loops the compiler vectorizes, computing
// f16/bf16 in float.
#include <cmath>

#include "kernels/cpu/custom_vmath.hpp"
#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

using dnnl::algorithm;

// f32 via oneDNN `alg`, other float dtypes via the loop `f`.
template <typename F>
KernelFn float_unary(algorithm alg, float alpha, float beta, F f) {
  return [=](KernelContext& ctx) {
    if (ctx.in(0).dtype() == DType::f32) return ew::dnnl_eltwise_f32(ctx.in(0), ctx.out(0), alg, alpha, beta);
    ew::unary_apply<kFloats>(ctx, f);
  };
}

template <typename F>
KernelFn loop_unary(F f) {
  return [=](KernelContext& ctx) { ew::unary_apply<kFloats>(ctx, f); };
}

void abs_cpu(KernelContext& ctx) {
  ew::unary_apply<kNumeric>(ctx, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_unsigned_v<C>) return x;
    else if constexpr (std::is_integral_v<C>)  // MIN wraps to MIN, as in C and numpy
      return x < 0 ? static_cast<C>(0 - static_cast<std::make_unsigned_t<C>>(x)) : x;
    else return std::abs(x);
  });
}

void neg_cpu(KernelContext& ctx) {
  ew::unary_apply<kFloats | kI64 | kI32 | kI8>(ctx, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_integral_v<C>)  // negate in unsigned arithmetic: MIN wraps to MIN
      return static_cast<C>(0 - static_cast<std::make_unsigned_t<C>>(x));
    else return -x;
  });
}

// f32 through a per-instruction-set row loop `vf` (custom_vmath.hpp), other float dtypes
// through the scalar `f` (the library is built for baseline x86-64, where floorf and erff are
// libm calls: Floor 4096x4096 took 9.6 ms, 35% of the copy bandwidth; Sin 72 ms through sinf;
// erff was GELU's cost; oneDNN has no erf eltwise).
template <typename VF, typename F>
KernelFn vector_unary(VF vf, F f) {
  return [=](KernelContext& ctx) {
    if (ctx.in(0).dtype() != DType::f32) return ew::unary_apply<kFloats>(ctx, f);
    const float* x = ctx.in(0).data<float>();
    float* y = ctx.out(0).data<float>();
    parallel_for(ctx.in(0).numel(), ew::kGrain, [&](int64_t b, int64_t e) { vf(x + b, y + b, e - b); });
  };
}

void sign_cpu(KernelContext& ctx) {
  ew::unary_apply<kNumeric>(ctx, [](auto x) {
    using C = decltype(x);
    if constexpr (std::is_unsigned_v<C>) return static_cast<C>(x > 0);
    else if constexpr (std::is_integral_v<C>) return static_cast<C>((x > 0) - (x < 0));
    else return x > C(0) ? C(1) : x < C(0) ? C(-1) : x == C(0) ? C(0) : x;  // NaN stays NaN
  });
}

}  // namespace

PORTA_REGISTER_ELEMENTWISE_KERNEL(Abs, cpu, kNumeric, abs_cpu)
PORTA_REGISTER_KERNEL(Sign, cpu, kNumeric, sign_cpu)
// Round: half to even under the default rounding mode, as numpy and ONNX.
PORTA_REGISTER_KERNEL(Round, cpu, kFloats, loop_unary([](auto x) { return std::nearbyint(x); }))
PORTA_REGISTER_KERNEL(Tan, cpu, kFloats, loop_unary([](auto x) { return std::tan(x); }))
PORTA_REGISTER_ELEMENTWISE_KERNEL(Neg, cpu, kFloats | kI64 | kI32 | kI8, neg_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Exp, cpu, kFloats,
                      float_unary(algorithm::eltwise_exp, 0, 0, [](auto x) { return std::exp(x); }))
// Log: porta's vectorized log (0.8 ulp) measured faster than oneDNN's eltwise_log (9.0 ms on
// 4096x4096, 38% of the copy bandwidth).
PORTA_REGISTER_KERNEL(Log, cpu, kFloats, vector_unary(vmath::log_f32, [](auto x) { return std::log(x); }))
PORTA_REGISTER_ELEMENTWISE_KERNEL(Tanh, cpu, kFloats,
                      float_unary(algorithm::eltwise_tanh, 0, 0, [](auto x) { return std::tanh(x); }))
PORTA_REGISTER_ELEMENTWISE_KERNEL(Sigmoid, cpu, kFloats,
                      float_unary(algorithm::eltwise_logistic, 0, 0,
                                  [](auto x) { return decltype(x)(1) / (decltype(x)(1) + std::exp(-x)); }))
PORTA_REGISTER_ELEMENTWISE_KERNEL(Sqrt, cpu, kFloats,
                      float_unary(algorithm::eltwise_sqrt, 0, 0, [](auto x) { return std::sqrt(x); }))
PORTA_REGISTER_KERNEL(Reciprocal, cpu, kFloats, loop_unary([](auto x) { return decltype(x)(1) / x; }))
PORTA_REGISTER_ELEMENTWISE_KERNEL(Erf, cpu, kFloats, vector_unary(vmath::erf_f32, [](auto x) { return std::erf(x); }))
PORTA_REGISTER_KERNEL(Sin, cpu, kFloats, vector_unary(vmath::sin_f32, [](auto x) { return std::sin(x); }))
PORTA_REGISTER_KERNEL(Cos, cpu, kFloats, vector_unary(vmath::cos_f32, [](auto x) { return std::cos(x); }))
PORTA_REGISTER_KERNEL(Floor, cpu, kFloats, vector_unary(vmath::floor_f32, [](auto x) { return std::floor(x); }))
PORTA_REGISTER_KERNEL(Ceil, cpu, kFloats, vector_unary(vmath::ceil_f32, [](auto x) { return std::ceil(x); }))

}  // namespace porta::cpu
