// porta gpu kernels — Conv (1-D to 3-D, groups, dilations, pads, strides, bias), the
// "implicit_gemm" implementation: im2col followed by one batched GEMM (gemm.cuh: cuBLAS on cuda,
// the tiled kernel on hip). On cuda builds with cuDNN, the "cudnn" implementation
// (conv_cudnn.cu) is tried first and this one takes the calls it declines.
//
// Spatial axes are padded to three (size 1, stride 1, no pad), as the reference does. The
// column buffer holds, per image and group, [C/group * kernel volume, output volume].
#include "kernels/cuda/conv_cudnn.cuh"
#include "kernels/cuda/copy_view.cuh"
#include "kernels/cuda/gemm.cuh"
#include "ops/window.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

struct ConvDims {
  int64_t in[3], kernel[3], stride[3], dilation[3], pad[3], out[3];
};

// col[(n * C + c) * kvol + k][o] = x[n, c, input position of (k, o)] or 0 in the padding.
template <typename T>
__global__ void im2col_kernel(const T* x, T* col, int64_t total, int64_t channels, ConvDims d) {
  const int64_t kvol = d.kernel[0] * d.kernel[1] * d.kernel[2];
  const int64_t ovol = d.out[0] * d.out[1] * d.out[2];
  const int64_t ivol = d.in[0] * d.in[1] * d.in[2];
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += step) {
    int64_t o = i % ovol, rest = i / ovol;
    int64_t k = rest % kvol, nc = rest / kvol;  // nc = n * channels + c
    int64_t ow = o % d.out[2], oh = (o / d.out[2]) % d.out[1], od = o / (d.out[2] * d.out[1]);
    int64_t kw = k % d.kernel[2], kh = (k / d.kernel[2]) % d.kernel[1], kd = k / (d.kernel[2] * d.kernel[1]);
    int64_t id = od * d.stride[0] - d.pad[0] + kd * d.dilation[0];
    int64_t ih = oh * d.stride[1] - d.pad[1] + kh * d.dilation[1];
    int64_t iw = ow * d.stride[2] - d.pad[2] + kw * d.dilation[2];
    bool inside = id >= 0 && id < d.in[0] && ih >= 0 && ih < d.in[1] && iw >= 0 && iw < d.in[2];
    col[i] = inside ? x[nc * ivol + (id * d.in[1] + ih) * d.in[2] + iw] : T{};
  }
}

}  // namespace

opdef::WindowGeometry conv_window(const KernelContext& ctx) {
  const Shape &xs = ctx.in(0).shape(), &ws = ctx.in(1).shape();
  std::vector<int64_t> ksize = opdef::kernel_shape("Conv", *ctx.attrs, xs.size() - 2, Shape(ws.begin() + 2, ws.end()));
  return opdef::window_geometry("Conv", xs, ksize, *ctx.attrs);
}

bool conv_bias_into(KernelContext& ctx) {
  if (!ctx.has_input(2)) return false;
  Tensor& y = ctx.out(0);
  const int64_t n = y.shape()[0], m = y.shape()[1];
  copy_view(ctx.in(2).reshape({m, 1}), y.reshape({n, m, y.numel() / std::max<int64_t>(n * m, 1)}), ctx.device);
  return true;
}

namespace {

void conv_gpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const Shape &xs = x.shape(), &ws = w.shape();
  const int64_t group = ctx.attrs->get_int("group");
  opdef::WindowGeometry g = conv_window(ctx);
  ConvDims d;
  const size_t lead = 3 - g.in.size();
  for (size_t a = 0; a < 3; ++a) {
    bool real = a >= lead;
    size_t s = a - lead;
    d.in[a] = real ? g.in[s] : 1;
    d.kernel[a] = real ? g.kernel[s] : 1;
    d.stride[a] = real ? g.strides[s] : 1;
    d.dilation[a] = real ? g.dilations[s] : 1;
    d.pad[a] = real ? g.pad_begin[s] : 0;
    d.out[a] = real ? g.out[s] : 1;
  }
  const int64_t n = xs[0], c = xs[1], m = ws[0], cg = c / group, mg = m / group;
  const int64_t kvol = d.kernel[0] * d.kernel[1] * d.kernel[2], ovol = d.out[0] * d.out[1] * d.out[2];
  const int device = ctx.device.index;
  // y = bias broadcast over [N, M, out volume]; the GEMM then adds onto it (beta 1).
  const bool bias = conv_bias_into(ctx);
  visit_gpu_dtype_in<kFloats>(x.dtype(), "Conv", [&](auto tag) {
    using T = decltype(tag);
    const int64_t total = n * c * kvol * ovol;
    Tensor col = Tensor::empty({total}, x.dtype(), ctx.device);
    if (total > 0) {
      launch<im2col_kernel<T>>(grid_for(total, 256, device), 256, 0, stream(device),
          device_ptr<const T>(x), device_ptr<T>(col), total, c, d);
      PORTA_GPU_CHECK_LAUNCH(device, "im2col_kernel");
    }
    // Batch (image, group): Y[n, g] (mg x ovol) = W[g] (mg x cg*kvol) * col[n, g] (cg*kvol x ovol).
    GemmCall<T> call;
    call.a = device_ptr<const T>(w);
    call.b = device_ptr<const T>(col);
    call.c = device_ptr<T>(y);
    call.m = mg;
    call.n = ovol;
    call.k = cg * kvol;
    call.lda = cg * kvol;
    call.ldb = ovol;
    call.ldc = ovol;
    call.beta = bias ? 1.0 : 0.0;
    call.batches = n * group;
    int rank = 0;
    auto add_dim = [&](int64_t size, int64_t sc, int64_t sa, int64_t sb) {
      if (size == 1) return;
      call.batch.sizes[rank] = size;
      call.batch.strides[0][rank] = sc;
      call.batch.strides[1][rank] = sa;
      call.batch.strides[2][rank] = sb;
      ++rank;
    };
    add_dim(n, m * ovol, 0, c * kvol * ovol);
    add_dim(group, mg * ovol, mg * cg * kvol, cg * kvol * ovol);
    call.batch.rank = rank;
    gemm(call, device);
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IMPL(Conv, kFloats, conv_gpu, nullptr, "implicit_gemm", 0)

}  // namespace porta::PORTA_GPU_NS
