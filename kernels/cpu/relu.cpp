// Relu on cpu: a vectorizable loop per thread chunk.
#include <algorithm>

#include "kernels/cpu/cpu_common.hpp"

namespace porta::cpu {

static void relu_cpu(KernelContext& ctx) {
  visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>) {
      throw DTypeError("[Relu] unsupported dtype");
    } else {
      const T* x = ctx.in(0).data<T>();
      T* y = ctx.out(0).data<T>();
      parallel_for(ctx.in(0).numel(), 1 << 15, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
            y[i] = T(std::max(static_cast<float>(x[i]), 0.0f));
          else
            y[i] = std::max(x[i], T(0));
        }
      });
    }
  });
}

PORTA_REGISTER_ELEMENTWISE_KERNEL(Relu, cpu, kFloats | kI64 | kI32 | kI8, relu_cpu)

}  // namespace porta::cpu
