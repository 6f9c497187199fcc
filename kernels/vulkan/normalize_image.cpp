// NormalizeImage (ai.porta) on vulkan: normalize_image.comp, u8 in (8-bit storage), f32 NCHW
// out, one invocation per output element. The per-channel constants a = 1 / (255 std) and
// b = -mean / std are push constants, so the kernel takes at most kMaxChannels channels.
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

constexpr int64_t kMaxChannels = 12;  // the float a[12], b[12] push constants of the shader

void normalize_image_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t n = y.numel();
  if (n == 0) return;
  const Shape& ys = y.shape();  // N, C, H, W
  int64_t C = ys[1], HW = ys[2] * ys[3];
  std::vector<double> mean = ctx.attrs->get_floats("mean"), stdv = ctx.attrs->get_floats("std");
  Launch l;
  l.shader = "normalize_image";
  l.spec = {ctx.attrs->get_string("layout") == "NHWC" ? 1 : 0};
  l.args = {input(x), output(y)};
  l.push_u(n);
  l.push_u(C);
  l.push_u(HW);
  for (int64_t c = 0; c < kMaxChannels; ++c) l.push_f(c < C ? 1.0 / (255.0 * stdv[c]) : 0.0);
  for (int64_t c = 0; c < kMaxChannels; ++c) l.push_f(c < C ? -mean[c] / stdv[c] : 0.0);
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

std::string normalize_image_supports(const KernelContext& ctx) {
  if (!device_caps(ctx).int8_storage) return "the device has no 8-bit storage (X is u8)";
  const std::string& layout = ctx.attrs->get_string("layout");
  const Shape& x = ctx.in(0).shape();
  if (x.size() == 4) {
    int64_t channels = layout == "NHWC" ? x[3] : x[1];
    if (channels > kMaxChannels)
      return str(channels, " channels, more than the ", kMaxChannels,
                 " whose constants fit in the kernel's push constants");
  }
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(NormalizeImage, vulkan, kU8, normalize_image_vulkan, normalize_image_supports)

}  // namespace porta::vk
