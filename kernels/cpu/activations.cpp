// Activations with attributes on cpu: LeakyRelu, Elu and HardSwish through oneDNN eltwise for
// f32; the others, and the other float dtypes, as loops computing in float (double for f64).
#include <algorithm>
#include <cmath>

#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

void leaky_relu_cpu(KernelContext& ctx) {
  float alpha = static_cast<float>(ctx.attrs->get_float("alpha"));
  if (ctx.in(0).dtype() == DType::f32)
    return ew::dnnl_eltwise_f32(ctx.in(0), ctx.out(0), dnnl::algorithm::eltwise_relu, alpha);
  double a64 = ctx.attrs->get_float("alpha");
  ew::unary_apply<kFloats>(ctx, [=](auto x) {
    using C = decltype(x);
    return x >= 0 ? x : static_cast<C>(a64) * x;
  });
}

void elu_cpu(KernelContext& ctx) {
  float alpha = static_cast<float>(ctx.attrs->get_float("alpha"));
  if (ctx.in(0).dtype() == DType::f32)
    return ew::dnnl_eltwise_f32(ctx.in(0), ctx.out(0), dnnl::algorithm::eltwise_elu, alpha);
  double a64 = ctx.attrs->get_float("alpha");
  ew::unary_apply<kFloats>(ctx, [=](auto x) {
    using C = decltype(x);
    return x > 0 ? x : static_cast<C>(a64) * std::expm1(x);
  });
}

// v clamped to [0, 1], NaN kept (the comparisons are false for NaN).
template <typename C>
C unit_clamp(C v) {
  return v < C(0) ? C(0) : v > C(1) ? C(1) : v;
}

void hard_sigmoid_cpu(KernelContext& ctx) {
  double alpha = ctx.attrs->get_float("alpha"), beta = ctx.attrs->get_float("beta");
  ew::unary_apply<kFloats>(ctx, [=](auto x) {
    using C = decltype(x);
    return unit_clamp(static_cast<C>(alpha) * x + static_cast<C>(beta));
  });
}

void hard_swish_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f32)
    return ew::dnnl_eltwise_f32(ctx.in(0), ctx.out(0), dnnl::algorithm::eltwise_hardswish, 0.f);
  ew::unary_apply<kFloats>(ctx, [](auto x) {
    using C = decltype(x);
    return x * unit_clamp(x / C(6) + C(0.5));
  });
}

void softplus_cpu(KernelContext& ctx) {
  ew::unary_apply<kFloats>(ctx, [](auto x) {
    using C = decltype(x);
    return (x > C(0) ? x : C(0)) + std::log1p(std::exp(-std::abs(x)));
  });
}

void softsign_cpu(KernelContext& ctx) {
  ew::unary_apply<kFloats>(ctx, [](auto x) { return x / (decltype(x)(1) + std::abs(x)); });
}

void selu_cpu(KernelContext& ctx) {
  double alpha = ctx.attrs->get_float("alpha"), gamma = ctx.attrs->get_float("gamma");
  ew::unary_apply<kFloats>(ctx, [=](auto x) {
    using C = decltype(x);
    return x > C(0) ? static_cast<C>(gamma) * x : static_cast<C>(gamma * alpha) * std::expm1(x);
  });
}

void celu_cpu(KernelContext& ctx) {
  double alpha = ctx.attrs->get_float("alpha");
  ew::unary_apply<kFloats>(ctx, [=](auto x) {
    using C = decltype(x);
    C a = static_cast<C>(alpha);
    if (x != x) return x;
    return (x > C(0) ? x : C(0)) + std::min(C(0), a * std::expm1(x / a));
  });
}

}  // namespace

PORTA_REGISTER_ELEMENTWISE_KERNEL(LeakyRelu, cpu, kFloats, leaky_relu_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Elu, cpu, kFloats, elu_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(HardSigmoid, cpu, kFloats, hard_sigmoid_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(HardSwish, cpu, kFloats, hard_swish_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Softplus, cpu, kFloats, softplus_cpu)
PORTA_REGISTER_KERNEL(Softsign, cpu, kFloats, softsign_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Selu, cpu, kFloats, selu_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Celu, cpu, kFloats, celu_cpu)

}  // namespace porta::cpu
