// LeakyRelu and Elu on cpu: oneDNN eltwise for f32, loops in float for the other dtypes.
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

}  // namespace

PORTA_REGISTER_KERNEL(LeakyRelu, cpu, kFloats, leaky_relu_cpu)
PORTA_REGISTER_KERNEL(Elu, cpu, kFloats, elu_cpu)

}  // namespace porta::cpu
