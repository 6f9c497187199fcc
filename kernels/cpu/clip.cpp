// Clip on cpu: bounds are read from the (host) min/max scalars; two compares per element,
// written so that NaN passes through and the loop vectorizes.
#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

void clip_cpu(KernelContext& ctx) {
  visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (dtype_in(kNumeric, ew::dtype_of<T>())) {
      using C = ew::compute_t<T>;
      bool has_lo = ctx.has_input(1), has_hi = ctx.has_input(2);
      C lo = has_lo ? static_cast<C>(ctx.in(1).data<T>()[0]) : C(0);
      C hi = has_hi ? static_cast<C>(ctx.in(2).data<T>()[0]) : C(0);
      if (has_lo && has_hi)
        ew::unary_loop<T>(ctx.in(0), ctx.out(0), [=](C x) {
          x = x < lo ? lo : x;
          return x > hi ? hi : x;
        });
      else if (has_lo)
        ew::unary_loop<T>(ctx.in(0), ctx.out(0), [=](C x) { return x < lo ? lo : x; });
      else if (has_hi)
        ew::unary_loop<T>(ctx.in(0), ctx.out(0), [=](C x) { return x > hi ? hi : x; });
      else
        ew::unary_loop<T>(ctx.in(0), ctx.out(0), [](C x) { return x; });
    } else {
      ew::unsupported_dtype("Clip", ctx.in(0).dtype(), kNumeric);
    }
  });
}

}  // namespace

PORTA_REGISTER_ELEMENTWISE_KERNEL(Clip, cpu, kNumeric, clip_cpu)

}  // namespace porta::cpu
