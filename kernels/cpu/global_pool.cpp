// GlobalAveragePool / GlobalMaxPool on cpu: one reduction per (n, c) plane, planes spread
// across threads. A plain loop: the op is memory bound and each plane is contiguous, so a
// oneDNN primitive would add a descriptor and nothing else.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/custom_vmath.hpp"
#include "kernels/cpu/dnn_layout.hpp"

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

// x in the channels-last layout (N x pixels x C): per image, a running sum (double) or maximum
// per channel over the pixel rows, channels split across threads.
void global_pool_channels_last(const float* x, float* y, int64_t n, int64_t c, int64_t pixels, bool max) {
  const int64_t chunk = 64;
  const int64_t chunks = (c + chunk - 1) / chunk;
  parallel_for(n * chunks, 1, [&](int64_t t0, int64_t t1) {
    double acc[chunk];
    float m[chunk];
    for (int64_t t = t0; t < t1; ++t) {
      int64_t img = t / chunks, c0 = (t % chunks) * chunk, w = std::min(chunk, c - c0);
      const float* base = x + img * pixels * c + c0;
      if (max) {
        for (int64_t k = 0; k < w; ++k) m[k] = base[k];
        for (int64_t p = 1; p < pixels; ++p)
          for (int64_t k = 0; k < w; ++k) {
            float v = base[p * c + k];
            m[k] = std::isnan(v) || v > m[k] ? v : m[k];
          }
        for (int64_t k = 0; k < w; ++k) y[img * c + c0 + k] = m[k];
      } else {
        for (int64_t k = 0; k < w; ++k) acc[k] = 0.0;
        for (int64_t p = 0; p < pixels; ++p)
          for (int64_t k = 0; k < w; ++k) acc[k] += base[p * c + k];
        for (int64_t k = 0; k < w; ++k) y[img * c + c0 + k] = static_cast<float>(acc[k] / static_cast<double>(pixels));
      }
    }
  });
}

void global_pool_cpu(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  int64_t planes = x.dim(0) * x.dim(1);
  if (planes == 0) return;
  if (activation_layout(*ctx.attrs).input(0) && channels_last_tag(x.shape()) != dnnl::memory::format_tag::undef) {
    global_pool_channels_last(x.data<float>(), ctx.out(0).data<float>(), x.dim(0), x.dim(1), x.numel() / planes, max);
    return;
  }
  int64_t inner = x.numel() / planes;
  if (x.dtype() == DType::f64) global_pool_loop(x.data<double>(), ctx.out(0).data<double>(), planes, inner, max);
  else global_pool_loop(x.data<float>(), ctx.out(0).data<float>(), planes, inner, max);
}

void global_average_pool_cpu(KernelContext& ctx) { global_pool_cpu(ctx, false); }
void global_max_pool_cpu(KernelContext& ctx) { global_pool_cpu(ctx, true); }

}  // namespace

// Both read an f32 input in the channels-last layout; the output (N x C x 1...) is plain.
namespace {
KernelDef::LayoutUse global_pool_layout_use(const KernelContext& call) {
  return {call.in(0).dtype() == DType::f32 ? 1u : 0u, false};
}
KernelDef global_pool_kernel(const char* op, KernelFn fn) {
  KernelDef k;
  k.op = op;
  k.backend = DeviceType::cpu;
  k.dtypes = kF32 | kF64;
  k.fn = std::move(fn);
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = global_pool_layout_use;
  return k;
}
const bool global_average_registered = register_kernel_at_load(global_pool_kernel("GlobalAveragePool", global_average_pool_cpu));
const bool global_max_registered = register_kernel_at_load(global_pool_kernel("GlobalMaxPool", global_max_pool_cpu));
}  // namespace

}  // namespace porta::cpu
