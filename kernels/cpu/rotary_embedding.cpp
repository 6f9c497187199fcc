// RotaryEmbedding on cpu: one pass over X, rows (b, h, position) split across threads; the
// inner loops over the D/2 pairs vectorize (halves: two contiguous runs; interleaved: pairs).
#include "kernels/cpu/cpu_common.hpp"

namespace porta::cpu {
namespace {

template <typename T>
void rotate_rows(const KernelContext& ctx, Tensor& out, bool interleaved) {
  const Shape& x = ctx.in(0).shape();
  int64_t S = x[2], D = x[3], half = D / 2, rows = x[0] * x[1] * S;
  const T *src = ctx.in(0).data<T>(), *cos = ctx.in(1).data<T>(), *sin = ctx.in(2).data<T>();
  T* dst = out.data<T>();
  parallel_for(rows, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(D, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = src + r * D;
      const T *c = cos + (r % S) * half, *s = sin + (r % S) * half;
      T* yr = dst + r * D;
      if (interleaved) {
        for (int64_t i = 0; i < half; ++i) {
          T a = xr[2 * i], b = xr[2 * i + 1];
          yr[2 * i] = a * c[i] - b * s[i];
          yr[2 * i + 1] = b * c[i] + a * s[i];
        }
      } else {
        const T *x1 = xr, *x2 = xr + half;
        for (int64_t i = 0; i < half; ++i) yr[i] = x1[i] * c[i] - x2[i] * s[i];
        for (int64_t i = 0; i < half; ++i) yr[half + i] = x2[i] * c[i] + x1[i] * s[i];
      }
    }
  });
}

void rotary_embedding_cpu(KernelContext& ctx) {
  if (ctx.out(0).numel() == 0) return;
  bool interleaved = ctx.attrs->get_int("interleaved") != 0;
  if (ctx.in(0).dtype() == DType::f32) rotate_rows<float>(ctx, ctx.out(0), interleaved);
  else rotate_rows<double>(ctx, ctx.out(0), interleaved);
}

}  // namespace

PORTA_REGISTER_KERNEL(RotaryEmbedding, cpu, kF32 | kF64, rotary_embedding_cpu)

}  // namespace porta::cpu
