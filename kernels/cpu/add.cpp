// Add on cpu: broadcast runs along the innermost axis.
#include "kernels/cpu/cpu_common.hpp"

namespace porta::cpu {

static void add_cpu(KernelContext& ctx) {
  Tensor& c = ctx.out(0);
  BroadcastIter it(c.shape(), {&ctx.in(0), &ctx.in(1)});
  visit_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("[Add] bool is not accepted");
    } else {
      const T* a = ctx.in(0).data<T>();
      const T* b = ctx.in(1).data<T>();
      T* out = c.data<T>();
      int64_t inner = it.inner, sa = it.inner_stride[0], sb = it.inner_stride[1];
      parallel_for(it.runs(), std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(inner, 1)),
                   [&](int64_t r0, int64_t r1) {
        int64_t off[2];
        for (int64_t r = r0; r < r1; ++r) {
          it.offsets(r, off);
          const T* pa = a + off[0];
          const T* pb = b + off[1];
          T* pc = out + r * inner;
          if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            for (int64_t i = 0; i < inner; ++i)
              pc[i] = T(static_cast<float>(pa[i * sa]) + static_cast<float>(pb[i * sb]));
          } else if (sa == 1 && sb == 1) {
            for (int64_t i = 0; i < inner; ++i) pc[i] = pa[i] + pb[i];
          } else {
            for (int64_t i = 0; i < inner; ++i) pc[i] = static_cast<T>(pa[i * sa] + pb[i * sb]);
          }
        }
      });
    }
  });
}

PORTA_REGISTER_KERNEL(Add, cpu, kNumeric, add_cpu)

}  // namespace porta::cpu
