// Add on cpu: a flat loop when no operand broadcasts (beyond a single element), else
// broadcast runs along the innermost axis.
#include "kernels/cpu/cpu_common.hpp"

namespace porta::cpu {

// Operands of the output's shape (or single elements) need no broadcast iterator: one flat
// loop. This is also the whole cost of a tiny eager Add, where the iterator's set-up showed.
template <typename T>
static bool add_flat(const Tensor& a, const Tensor& b, Tensor& c) {
  int64_t n = c.numel();
  bool a_full = a.shape() == c.shape(), b_full = b.shape() == c.shape();
  if (!((a_full || a.numel() == 1) && (b_full || b.numel() == 1)) || n == 0) return n == 0;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.data<T>();
  parallel_for(n, 1 << 15, [&](int64_t s, int64_t e) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      for (int64_t i = s; i < e; ++i)
        pc[i] = T(static_cast<float>(pa[a_full ? i : 0]) + static_cast<float>(pb[b_full ? i : 0]));
    } else if (a_full && b_full) {
      for (int64_t i = s; i < e; ++i) pc[i] = pa[i] + pb[i];
    } else if (a_full) {
      const T vb = pb[0];
      for (int64_t i = s; i < e; ++i) pc[i] = static_cast<T>(pa[i] + vb);
    } else if (b_full) {
      const T va = pa[0];
      for (int64_t i = s; i < e; ++i) pc[i] = static_cast<T>(va + pb[i]);
    } else {
      for (int64_t i = s; i < e; ++i) pc[i] = static_cast<T>(pa[0] + pb[0]);
    }
  });
  return true;
}

static void add_cpu(KernelContext& ctx) {
  Tensor& c = ctx.out(0);
  if (c.dtype() != DType::boolean) {
    bool done = false;
    visit_dtype(c.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) done = add_flat<T>(ctx.in(0), ctx.in(1), c);
    });
    if (done) return;
  }
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

PORTA_REGISTER_ELEMENTWISE_KERNEL(Add, cpu, kNumeric, add_cpu)

}  // namespace porta::cpu
