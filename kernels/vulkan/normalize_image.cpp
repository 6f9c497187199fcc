// NormalizeImage (ai.porta) on vulkan: normalize_image.comp, u8 in (8-bit storage), f32 NCHW
// out, one invocation per output element. The per-channel constants a = 1 / (255 std) and
// b = -mean / std are push constants, so the kernel takes at most kMaxChannels channels.
// Outputs beyond maxStorageBufferRange (a 4096x4096 RGB image on lavapipe) are written in
// windows of whole planes (NCHW) or whole images (NHWC) whose offsets are binding-aligned.
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

constexpr int64_t kMaxChannels = 12;  // the float a[12], b[12] push constants of the shader

struct Image {
  bool nhwc = false;
  int64_t N = 0, C = 0, HW = 0;
};

Image image_of(const KernelContext& ctx) {
  const Shape& x = ctx.in(0).shape();
  Image im;
  im.nhwc = ctx.attrs->get_string("layout") == "NHWC";
  im.N = x[0];
  im.C = im.nhwc ? x[3] : x[1];
  im.HW = im.nhwc ? x[1] * x[2] : x[2] * x[3];
  return im;
}

// Output planes per dispatch: everything when it fits one binding, else the most whole planes
// (NCHW) or whole images' planes (NHWC) that fit; 0 when even one does not, or when window
// offsets would not be binding-aligned.
int64_t planes_per_window(const Image& im, const DeviceCaps& caps) {
  const int64_t planes = im.N * im.C;
  const uint64_t plane_bytes = static_cast<uint64_t>(im.HW) * 4;
  if (planes * plane_bytes <= caps.max_storage_range) return planes;
  int64_t unit = im.nhwc ? im.C : 1;  // planes that must travel together
  int64_t units = static_cast<int64_t>(caps.max_storage_range / (plane_bytes * unit));
  uint64_t in_unit_bytes = static_cast<uint64_t>(im.HW * unit);  // u8 input of one unit
  if (units == 0 || in_unit_bytes % caps.storage_alignment || (plane_bytes * unit) % caps.storage_alignment)
    return 0;
  return units * unit;
}

void normalize_image_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const Image im = image_of(ctx);
  const DeviceCaps& caps = device_caps(ctx);
  const int64_t window = planes_per_window(im, caps), planes = im.N * im.C;
  if (window == 0) throw BackendError("[NormalizeImage] no binding-sized window (the kernel should have declined)");
  std::vector<double> mean = ctx.attrs->get_floats("mean"), stdv = ctx.attrs->get_floats("std");
  for (int64_t p0 = 0; p0 < planes; p0 += window) {
    const int64_t count = std::min(window, planes - p0), n = count * im.HW;
    const int64_t img0 = p0 / im.C;
    Launch l;
    l.shader = "normalize_image";
    l.spec = {im.nhwc ? 1 : 0};
    Arg src = input(x), dst = output(y);
    dst.byte_offset = static_cast<size_t>(p0 * im.HW) * 4;
    dst.bytes = static_cast<size_t>(n) * 4;
    // NHWC windows start at an image (window is a multiple of C); NCHW at the same plane.
    src.byte_offset = static_cast<size_t>(im.nhwc ? img0 * im.HW * im.C : p0 * im.HW);
    src.bytes = static_cast<size_t>(n);
    l.args = {src, dst};
    for (int64_t v : {n, im.C, im.HW, p0, img0}) l.push_u(v);
    for (int64_t c = 0; c < kMaxChannels; ++c) l.push_f(c < im.C ? 1.0 / (255.0 * stdv[c]) : 0.0);
    for (int64_t c = 0; c < kMaxChannels; ++c) l.push_f(c < im.C ? -mean[c] / stdv[c] : 0.0);
    set_grid(l, caps, (n + 255) / 256);
    launch(ctx, std::move(l));
  }
}

std::string normalize_image_supports(const KernelContext& ctx) {
  const DeviceCaps& caps = device_caps(ctx);
  if (!caps.int8_storage) return "the device has no 8-bit storage (X is u8)";
  if (ctx.in(0).rank() != 4) return "";  // inference reports the error
  const Image im = image_of(ctx);
  if (im.C > kMaxChannels)
    return str(im.C, " channels, more than the ", kMaxChannels, " whose constants fit in the kernel's push constants");
  if (ctx.in(0).numel() >= (int64_t{1} << 31)) return "input with 2^31 elements or more";
  if (im.N * im.C > 0 && im.HW > 0 && planes_per_window(im, caps) == 0)
    return str("an output window of whole ", im.nhwc ? "images" : "planes", " (", im.HW, " pixels",
               im.nhwc ? str(" x ", im.C, " channels") : std::string(), ", f32) does not fit maxStorageBufferRange (",
               caps.max_storage_range, ") at an aligned offset");
  return "";
}

}  // namespace

PORTA_REGISTER_KERNEL(NormalizeImage, vulkan, kU8, normalize_image_vulkan, normalize_image_supports)

}  // namespace porta::vk
