// NormalizeImage on cpu: y = x * a[c] + b[c] with a = 1 / (255 std), b = -mean / std (one
// multiply-add per pixel). NCHW: each (n, c) plane is one vectorized run. NHWC: each image row
// is read once and scattered into the C output planes (RGB in one de-interleaving pass). Work
// is split across threads by rows; outputs beyond the caches are written with streaming stores.
#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"

namespace porta::cpu {
namespace {

void normalize_image_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const Shape& ys = y.shape();  // N, C, H, W
  int64_t N = ys[0], C = ys[1], H = ys[2], W = ys[3];
  std::vector<double> mean = ctx.attrs->get_floats("mean"), stdv = ctx.attrs->get_floats("std");
  std::vector<float> a(C), b(C);
  for (int64_t c = 0; c < C; ++c) {
    a[c] = static_cast<float>(1.0 / (255.0 * stdv[c]));
    b[c] = static_cast<float>(-mean[c] / stdv[c]);
  }
  const uint8_t* src = x.data<uint8_t>();
  float* dst = y.data<float>();
  bool nhwc = ctx.attrs->get_string("layout") == "NHWC";
  bool stream = vmath::streaming_output(static_cast<int64_t>(y.nbytes()));
  int64_t grain = std::max<int64_t>(1, (1 << 15) / std::max<int64_t>(W * C, 1));
  if (!nhwc) {
    // Rows of W pixels: (n, c, h) -> one affine run.
    parallel_for(N * C * H, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t c = (r / H) % C;
        vmath::affine_u8_f32(src + r * W, a[c], b[c], dst + r * W, W, stream);
      }
    });
    return;
  }
  parallel_for(N * H, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t n = r / H, h = r % H;
      const uint8_t* row = src + r * W * C;
      if (C == 3) {  // RGB: one de-interleaving pass
        float* out = dst + (n * C * H + h) * W;
        vmath::affine_rgb_u8_f32(row, a.data(), b.data(), out, out + H * W, out + 2 * H * W, W);
        continue;
      }
      for (int64_t c = 0; c < C; ++c) {
        float* out = dst + ((n * C + c) * H + h) * W;
        float ac = a[c], bc = b[c];
        for (int64_t w = 0; w < W; ++w) out[w] = static_cast<float>(row[w * C + c]) * ac + bc;
      }
    }
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(NormalizeImage, cpu, kU8, normalize_image_cpu)

}  // namespace porta::cpu
