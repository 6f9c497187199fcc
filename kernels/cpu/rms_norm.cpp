// RmsNorm on cpu: one pass for the sum of squares and one for the scaled output per row, rows
// split across threads. f32 rows use the vectorized loops; f64 plain loops.
#include <cmath>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"

namespace porta::cpu {
namespace {

void rms_norm_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t d = x.numel() == 0 ? 0 : x.shape().back();
  if (d == 0) return;
  int64_t rows = x.numel() / d;
  double eps = ctx.attrs->get_float("epsilon");
  int64_t grain = std::max<int64_t>(1, (1 << 14) / d);
  if (x.dtype() == DType::f32) {
    const float *src = x.data<float>(), *scale = ctx.in(1).data<float>();
    float* dst = ctx.out(0).data<float>();
    bool stream = vmath::streaming_output(static_cast<int64_t>(ctx.out(0).nbytes()));
    parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        double mean_sq = vmath::sum_squares_f32(src + r * d, d) / static_cast<double>(d);
        auto inv_rms = static_cast<float>(1.0 / std::sqrt(mean_sq + eps));
        vmath::mul_scale_f32(src + r * d, scale, inv_rms, dst + r * d, d, stream);
      }
    });
    return;
  }
  const double *src = x.data<double>(), *scale = ctx.in(1).data<double>();
  double* dst = ctx.out(0).data<double>();
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const double* row = src + r * d;
      double sum_sq = 0;
#pragma omp simd reduction(+ : sum_sq)
      for (int64_t j = 0; j < d; ++j) sum_sq += row[j] * row[j];
      double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(d) + eps);
      for (int64_t j = 0; j < d; ++j) dst[r * d + j] = row[j] * inv_rms * scale[j];
    }
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(RmsNorm, cpu, kF32 | kF64, rms_norm_cpu)

}  // namespace porta::cpu
