// porta gpu kernels — MaxPool (with the optional Indices output, storage_order) and
// AveragePool (count_include_pad), 1-D to 3-D, with pads, strides, dilations, auto_pad and
// ceil_mode. Geometry and divisors come from ops/window.hpp and ops/pool.hpp (the rules the
// reference and the cpu kernel use); spatial axes are padded to three (size 1, no pad).
//
// One thread per output element visits its window in row-major kernel order, as the
// reference does: MaxPool keeps the first largest value (a NaN is kept only when it is the
// first tap inside the input, like the cpu loop); AveragePool divides by the product over
// axes of the taps counted by opdef::pool_taps.
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/pool.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

struct PoolDims {
  int64_t in[3], kernel[3], stride[3], dilation[3], pad_begin[3], pad_end[3], out[3];
};

// Taps of axis a at output position o that count for the divisor (opdef::pool_taps).
__device__ int64_t pool_taps_on_axis(const PoolDims& d, int a, int64_t o, bool include_pad) {
  const int64_t lo = include_pad ? -d.pad_begin[a] : 0;
  const int64_t hi = include_pad ? d.in[a] + d.pad_end[a] : d.in[a];
  int64_t taps = 0;
  for (int64_t k = 0; k < d.kernel[a]; ++k) {
    int64_t at = o * d.stride[a] - d.pad_begin[a] + k * d.dilation[a];
    taps += at >= lo && at < hi;
  }
  return taps;
}

template <typename T, bool Max>
__global__ void pool_kernel(const T* x, T* y, int64_t* indices, int64_t total, PoolDims d,
                            bool include_pad, bool column_major) {
  using A = acc_t<T>;
  const int64_t osize = d.out[0] * d.out[1] * d.out[2], isize = d.in[0] * d.in[1] * d.in[2];
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t plane = i / osize, oi = i % osize;
    const int64_t o[3] = {oi / (d.out[1] * d.out[2]), (oi / d.out[2]) % d.out[1], oi % d.out[2]};
    const T* px = x + plane * isize;
    A acc = A(0);
    int64_t best = -1;
    for (int64_t k0 = 0; k0 < d.kernel[0]; ++k0) {
      const int64_t a0 = o[0] * d.stride[0] - d.pad_begin[0] + k0 * d.dilation[0];
      if (a0 < 0 || a0 >= d.in[0]) continue;
      for (int64_t k1 = 0; k1 < d.kernel[1]; ++k1) {
        const int64_t a1 = o[1] * d.stride[1] - d.pad_begin[1] + k1 * d.dilation[1];
        if (a1 < 0 || a1 >= d.in[1]) continue;
        for (int64_t k2 = 0; k2 < d.kernel[2]; ++k2) {
          const int64_t a2 = o[2] * d.stride[2] - d.pad_begin[2] + k2 * d.dilation[2];
          if (a2 < 0 || a2 >= d.in[2]) continue;
          const int64_t flat = (a0 * d.in[1] + a1) * d.in[2] + a2;
          const A v = load_acc<T>(px[flat]);
          if constexpr (Max) {
            if (best < 0 || v > acc) {
              acc = v;
              // Column major: first spatial axis fastest (unused leading axes add 0).
              best = plane * isize + (column_major ? a0 + d.in[0] * (a1 + d.in[1] * a2) : flat);
            }
          } else {
            acc += v;
          }
        }
      }
    }
    if constexpr (Max) {
      // No tap inside the input (not produced by valid geometry): -inf (i8/u8: the type's
      // lowest value), index -1, as on cpu.
      if (best < 0) {
        if constexpr (std::is_integral_v<A>) acc = std::is_signed_v<A> ? A(-128) : A(0);
        else acc = -INFINITY;
      }
      if (indices) indices[i] = best;
    } else {
      int64_t taps = 1;
      for (int a = 0; a < 3; ++a) taps *= pool_taps_on_axis(d, a, o[a], include_pad);
      acc = acc / static_cast<A>(taps);
    }
    y[i] = store_acc<T>(acc);
  }
}

template <bool Max>
void pool_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t total = y.numel();
  if (total == 0) return;
  opdef::WindowGeometry g = opdef::pool_geometry(ctx.op->name, x.shape(), *ctx.attrs);
  PoolDims d;
  const size_t lead = 3 - g.spatial();
  for (size_t a = 0; a < 3; ++a) {
    const bool real = a >= lead;
    const size_t s = a - lead;
    d.in[a] = real ? g.in[s] : 1;
    d.kernel[a] = real ? g.kernel[s] : 1;
    d.stride[a] = real ? g.strides[s] : 1;
    d.dilation[a] = real ? g.dilations[s] : 1;
    d.pad_begin[a] = real ? g.pad_begin[s] : 0;
    d.pad_end[a] = real ? g.pad_end[s] : 0;
    d.out[a] = real ? g.out[s] : 1;
  }
  const bool include_pad = !Max && ctx.attrs->get_int("count_include_pad", 0) != 0;
  const bool column_major = Max && ctx.attrs->get_int("storage_order", 0) != 0;
  int64_t* indices = Max && ctx.outputs.size() > 1 && ctx.out(1).defined() && ctx.out(1).numel() > 0
                         ? device_ptr<int64_t>(ctx.out(1))
                         : nullptr;
  const int device = ctx.device.index;
  constexpr DTypeSet kTypes = Max ? kFloats | kI8 | kU8 : kFloats;  // MaxPool takes 8-bit images too
  visit_gpu_dtype_in<kTypes>(x.dtype(), ctx.op->name, [&](auto tag) {
    using T = decltype(tag);
    launch<pool_kernel<T, Max>>(grid_for(total, 256, device), 256, 0, stream(device),
        device_ptr<const T>(x), device_ptr<T>(y), indices, total, d, include_pad, column_major);
    PORTA_GPU_CHECK_LAUNCH(device, "pool_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(MaxPool, kFloats | kI8 | kU8, pool_gpu<true>)
PORTA_REGISTER_GPU_KERNEL(AveragePool, kFloats, pool_gpu<false>)

}  // namespace porta::PORTA_GPU_NS
