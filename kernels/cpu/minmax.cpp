// Max and Min on cpu: the first two inputs are combined into the output, each further input
// is folded into it in place (the output has the full broadcast shape). Branch-free selects
// that propagate NaN and vectorize.
#include <cstring>

#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

template <bool IsMax>
void minmax_cpu(KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  if (ctx.inputs.size() == 1) {
    if (out.numel() > 0) std::memcpy(out.raw_data(), ctx.in(0).raw_data(), out.nbytes());
    return;
  }
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (dtype_in(kNumeric, ew::dtype_of<T>())) {
      using C = ew::compute_t<T>;
      auto f = [](C a, C b) {
        if constexpr (std::is_floating_point_v<C>) {
          C m = IsMax ? (a < b ? b : a) : (b < a ? b : a);
          return a != a ? a : (b != b ? b : m);  // NaN wins
        } else {
          return IsMax ? (a < b ? b : a) : (b < a ? b : a);
        }
      };
      ew::binary_loop<T, T>(ctx.in(0), ctx.in(1), out, f);
      for (size_t k = 2; k < ctx.inputs.size(); ++k) ew::binary_loop<T, T>(out, ctx.in(k), out, f);
    } else {
      ew::unsupported_dtype(ctx.op->name, out.dtype(), kNumeric);
    }
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(Max, cpu, kNumeric, minmax_cpu<true>)
PORTA_REGISTER_KERNEL(Min, cpu, kNumeric, minmax_cpu<false>)

}  // namespace porta::cpu
