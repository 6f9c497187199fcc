// The variadic ops on cpu (Max, Min, Sum, Mean): the first two inputs are combined into the
// output, each further input is folded into it in place (the output has the full broadcast
// shape); Mean then scales by 1/n. Max/Min are branch-free selects that propagate NaN and
// vectorize.
#include <cstring>

#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

enum class Fold { max, min, sum, mean };

template <Fold Kind>
void variadic_cpu(KernelContext& ctx) {
  constexpr DTypeSet allowed = Kind == Fold::max || Kind == Fold::min ? kNumeric : kFloats;
  Tensor& out = ctx.out(0);
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (dtype_in(allowed, ew::dtype_of<T>())) {
      using C = ew::compute_t<T>;
      auto f = [](C a, C b) {
        if constexpr (Kind == Fold::sum || Kind == Fold::mean) {
          return a + b;
        } else if constexpr (std::is_floating_point_v<C>) {
          C m = Kind == Fold::max ? (a < b ? b : a) : (b < a ? b : a);
          return a != a ? a : (b != b ? b : m);  // NaN wins
        } else {
          return Kind == Fold::max ? (a < b ? b : a) : (b < a ? b : a);
        }
      };
      if (ctx.inputs.size() == 1) {
        if (out.numel() > 0) std::memcpy(out.raw_data(), ctx.in(0).raw_data(), out.nbytes());
      } else {
        ew::binary_loop<T, T>(ctx.in(0), ctx.in(1), out, f);
        for (size_t k = 2; k < ctx.inputs.size(); ++k) ew::binary_loop<T, T>(out, ctx.in(k), out, f);
      }
      if constexpr (Kind == Fold::mean) {
        T* p = out.data<T>();
        C scale = C(1) / static_cast<C>(ctx.inputs.size());
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<T>(static_cast<C>(p[i]) * scale);
      }
    } else {
      ew::unsupported_dtype(ctx.op->name, out.dtype(), allowed);
    }
  });
}

}  // namespace

PORTA_REGISTER_ELEMENTWISE_KERNEL(Max, cpu, kNumeric, variadic_cpu<Fold::max>)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Min, cpu, kNumeric, variadic_cpu<Fold::min>)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Sum, cpu, kFloats, variadic_cpu<Fold::sum>)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Mean, cpu, kFloats, variadic_cpu<Fold::mean>)

}  // namespace porta::cpu
