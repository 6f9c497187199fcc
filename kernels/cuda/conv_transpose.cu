// porta gpu kernels — ConvTranspose (1-D to 3-D, groups, strides, dilations, pads,
// output_padding, output_shape, auto_pad) with geometry from opdef::transposed_geometry.
//
// Written as a gather, not the reference's scatter: one thread per output element sums the
// input elements whose kernel window reaches it, so no two threads write one element (no
// atomics, deterministic). Output position o of an axis is reached from input i through tap k
// when o = i * stride + k * dilation - pad_begin, i.e. i = (o + pad_begin - k * dilation) /
// stride must divide exactly and lie inside the input. Positions no input reaches (the
// output_padding rows) get the bias alone.
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/window.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

struct TransposedDims {
  int64_t in[3], kernel[3], stride[3], dilation[3], pad[3], out[3];
};

// Input index along one axis for output o and tap k, or -1 when none.
__device__ __forceinline__ int64_t source_of(int64_t o, int64_t k, const TransposedDims& d, int a) {
  const int64_t t = o + d.pad[a] - k * d.dilation[a];
  if (t < 0 || t % d.stride[a] != 0) return -1;
  const int64_t i = t / d.stride[a];
  return i < d.in[a] ? i : -1;
}

// x: N x C x in, w: C x Mg x kernel, y: N x (group * Mg) x out.
template <typename T>
__global__ void conv_transpose_kernel(const T* x, const T* w, const T* bias, T* y, int64_t total,
                                      int64_t channels, int64_t group_channels, int64_t group_out,
                                      int64_t group, TransposedDims d) {
  using A = acc_t<T>;
  const int64_t osize = d.out[0] * d.out[1] * d.out[2], isize = d.in[0] * d.in[1] * d.in[2];
  const int64_t ksize = d.kernel[0] * d.kernel[1] * d.kernel[2];
  const int64_t m = group_out * group;
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += step) {
    const int64_t o_flat = i % osize, bm = i / osize;
    const int64_t oc_all = bm % m, b = bm / m;
    const int64_t g = oc_all / group_out, oc = oc_all % group_out;
    const int64_t o[3] = {o_flat / (d.out[1] * d.out[2]), (o_flat / d.out[2]) % d.out[1], o_flat % d.out[2]};
    A acc = bias ? load_acc<T>(bias[oc_all]) : A(0);
    for (int64_t ic = g * group_channels; ic < (g + 1) * group_channels; ++ic) {
      const T* px = x + (b * channels + ic) * isize;
      const T* pw = w + (ic * group_out + oc) * ksize;
      for (int64_t k0 = 0; k0 < d.kernel[0]; ++k0) {
        const int64_t i0 = source_of(o[0], k0, d, 0);
        if (i0 < 0) continue;
        for (int64_t k1 = 0; k1 < d.kernel[1]; ++k1) {
          const int64_t i1 = source_of(o[1], k1, d, 1);
          if (i1 < 0) continue;
          for (int64_t k2 = 0; k2 < d.kernel[2]; ++k2) {
            const int64_t i2 = source_of(o[2], k2, d, 2);
            if (i2 < 0) continue;
            acc += load_acc<T>(px[(i0 * d.in[1] + i1) * d.in[2] + i2]) *
                   load_acc<T>(pw[(k0 * d.kernel[1] + k1) * d.kernel[2] + k2]);
          }
        }
      }
    }
    y[i] = store_acc<T>(acc);
  }
}

void conv_transpose_gpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  const int64_t total = y.numel();
  if (total == 0) return;
  const Shape &xs = x.shape(), &ws = w.shape();
  std::vector<int64_t> ksize =
      opdef::kernel_shape("ConvTranspose", *ctx.attrs, xs.size() - 2, Shape(ws.begin() + 2, ws.end()));
  opdef::WindowGeometry g = opdef::transposed_geometry("ConvTranspose", xs, ksize, *ctx.attrs, nullptr);
  TransposedDims d;
  const size_t lead = 3 - g.spatial();
  for (size_t a = 0; a < 3; ++a) {
    const bool real = a >= lead;
    const size_t s = a - lead;
    d.in[a] = real ? g.in[s] : 1;
    d.kernel[a] = real ? g.kernel[s] : 1;
    d.stride[a] = real ? g.strides[s] : 1;
    d.dilation[a] = real ? g.dilations[s] : 1;
    d.pad[a] = real ? g.pad_begin[s] : 0;
    d.out[a] = real ? g.out[s] : 1;
  }
  const int64_t group = ctx.attrs->get_int("group");
  const int64_t channels = xs[1], group_channels = channels / group, group_out = ws[1];
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kFloats>(x.dtype(), "ConvTranspose", [&](auto tag) {
    using T = decltype(tag);
    launch<conv_transpose_kernel<T>>(grid_for(total, 256, device), 256, 0, stream(device),
        device_ptr<const T>(x), device_ptr<const T>(w),
        ctx.has_input(2) ? device_ptr<const T>(ctx.in(2)) : nullptr, device_ptr<T>(y), total, channels,
        group_channels, group_out, group, d);
    PORTA_GPU_CHECK_LAUNCH(device, "conv_transpose_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(ConvTranspose, kFloats, conv_transpose_gpu)

}  // namespace porta::PORTA_GPU_NS
