// porta gpu kernels — NormalizeImage (ai.porta): u8 NCHW or NHWC image to f32 NCHW, one thread
// per output element (grid-stride): y = x * a[c] + b[c], a = 1 / (255 std), b = -mean / std.
// The per-channel constants are passed by value (at most kMaxChannels; more are declined and
// the composite runs). CUDA and HIP.
#include "kernels/cuda/gpu_kernel.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

constexpr int64_t kMaxChannels = 64;

struct ChannelAffine {
  float a[kMaxChannels];
  float b[kMaxChannels];
};

template <bool Nhwc>
__global__ void normalize_image_kernel(const uint8_t* x, float* y, int64_t n, int64_t channels, int64_t plane,
                                       ChannelAffine k) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
    const int64_t hw = i % plane, nc = i / plane, c = nc % channels, img = nc / channels;
    const int64_t from = Nhwc ? (img * plane + hw) * channels + c : i;
    y[i] = static_cast<float>(x[from]) * k.a[c] + k.b[c];
  }
}

void normalize_image_gpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const Shape& ys = y.shape();  // N, C, H, W
  const int64_t channels = ys[1], plane = ys[2] * ys[3];
  std::vector<double> mean = ctx.attrs->get_floats("mean"), stdv = ctx.attrs->get_floats("std");
  ChannelAffine k{};
  for (int64_t c = 0; c < channels; ++c) {
    k.a[c] = static_cast<float>(1.0 / (255.0 * stdv[c]));
    k.b[c] = static_cast<float>(-mean[c] / stdv[c]);
  }
  const int device = ctx.device.index;
  const uint8_t* px = device_ptr<const uint8_t>(ctx.in(0));
  float* py = device_ptr<float>(y);
  unsigned blocks = grid_for(n, 256, device);
  if (ctx.attrs->get_string("layout") == "NHWC")
    launch<normalize_image_kernel<true>>(blocks, 256, 0, stream(device), px, py, n, channels, plane, k);
  else
    launch<normalize_image_kernel<false>>(blocks, 256, 0, stream(device), px, py, n, channels, plane, k);
  PORTA_GPU_CHECK_LAUNCH(device, "normalize_image_kernel");
}

std::string normalize_image_supports(const KernelContext& ctx) {
  const Shape& x = ctx.in(0).shape();
  if (x.size() != 4) return "";  // inference reports the error
  int64_t channels = ctx.attrs->get_string("layout") == "NHWC" ? x[3] : x[1];
  if (channels > kMaxChannels)
    return str(channels, " channels, more than the ", kMaxChannels, " whose constants the kernel takes by value");
  return "";
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IF(NormalizeImage, kU8, normalize_image_gpu, normalize_image_supports)

}  // namespace porta::PORTA_GPU_NS
