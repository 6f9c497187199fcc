// GlobalAveragePool / GlobalMaxPool on cpu: one reduction per (n, c) plane, planes spread
// across threads. A plain loop: the op is memory bound and each plane is contiguous, so a
// oneDNN primitive would add a descriptor and nothing else.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"

namespace porta::cpu {
namespace {

template <typename T>
void global_pool_loop(const T* x, T* y, int64_t planes, int64_t inner, bool max) {
  parallel_for(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* px = x + p * inner;
      if constexpr (std::is_same_v<T, float>) {
        // Vectorized (one running float sum was bound by the add latency: 10 GB/s).
        y[p] = max ? vmath::extreme_nan_f32(px, inner, true)
                   : static_cast<float>(vmath::sum_f32(px, inner) / static_cast<double>(inner));
        continue;
      }
      if (max) {
        T m = px[0];
        for (int64_t j = 1; j < inner; ++j) m = std::isnan(px[j]) || px[j] > m ? px[j] : m;
        y[p] = m;
      } else {
        T s = 0;
        for (int64_t j = 0; j < inner; ++j) s += px[j];
        y[p] = s / static_cast<T>(inner);
      }
    }
  });
}

void global_pool_cpu(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  int64_t planes = x.dim(0) * x.dim(1);
  if (planes == 0) return;
  int64_t inner = x.numel() / planes;
  if (x.dtype() == DType::f64) global_pool_loop(x.data<double>(), ctx.out(0).data<double>(), planes, inner, max);
  else global_pool_loop(x.data<float>(), ctx.out(0).data<float>(), planes, inner, max);
}

void global_average_pool_cpu(KernelContext& ctx) { global_pool_cpu(ctx, false); }
void global_max_pool_cpu(KernelContext& ctx) { global_pool_cpu(ctx, true); }

}  // namespace

PORTA_REGISTER_KERNEL(GlobalAveragePool, cpu, kF32 | kF64, global_average_pool_cpu)
PORTA_REGISTER_KERNEL(GlobalMaxPool, cpu, kF32 | kF64, global_max_pool_cpu)

}  // namespace porta::cpu
