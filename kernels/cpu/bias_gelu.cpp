// BiasGelu on cpu: rows of the last axis, bias added and gelu applied in one pass (f32 with
// vectorized erf / exp; f64 with the C library's erf and tanh), rows split across threads.
// Gelu: the same without a bias, one flat pass (any layout), split across threads.
#include <cmath>
#include <numbers>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"

namespace porta::cpu {
namespace {

void bias_gelu_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t c = x.numel() == 0 ? 0 : x.shape().back();
  if (c == 0) return;
  int64_t rows = x.numel() / c;
  bool tanh_form = ctx.attrs->get_string("approximate") == "tanh";
  int64_t grain = std::max<int64_t>(1, (1 << 14) / c);
  if (x.dtype() == DType::f32) {
    const float *src = x.data<float>(), *bias = ctx.in(1).data<float>();
    float* dst = ctx.out(0).data<float>();
    bool stream = vmath::streaming_output(static_cast<int64_t>(ctx.out(0).nbytes()));
    auto row_fn = tanh_form ? vmath::bias_gelu_tanh_f32 : vmath::bias_gelu_erf_f32;
    parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) row_fn(src + r * c, bias, dst + r * c, c, stream);
    });
    return;
  }
  const double *src = x.data<double>(), *bias = ctx.in(1).data<double>();
  double* dst = ctx.out(0).data<double>();
  const double k = std::sqrt(2.0 / std::numbers::pi);
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t j = 0; j < c; ++j) {
        double h = src[r * c + j] + bias[j];
        dst[r * c + j] = tanh_form ? 0.5 * h * (1.0 + std::tanh(k * (h + 0.044715 * h * h * h)))
                                   : 0.5 * h * (1.0 + std::erf(h / std::numbers::sqrt2));
      }
  });
}

void gelu_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t n = x.numel();
  const bool tanh_form = ctx.attrs->get_string("approximate") == "tanh";
  if (x.dtype() == DType::f32) {
    const float* src = x.data<float>();
    float* dst = ctx.out(0).data<float>();
    auto fn = tanh_form ? vmath::gelu_tanh_f32 : vmath::gelu_erf_f32;
    parallel_for(n, int64_t{1} << 14, [&](int64_t b, int64_t e) { fn(src + b, dst + b, e - b); });
    return;
  }
  const double* src = x.data<double>();
  double* dst = ctx.out(0).data<double>();
  const double k = std::sqrt(2.0 / std::numbers::pi);
  parallel_for(n, int64_t{1} << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      double h = src[i];
      dst[i] = tanh_form ? 0.5 * h * (1.0 + std::tanh(k * (h + 0.044715 * h * h * h)))
                         : 0.5 * h * (1.0 + std::erf(h / std::numbers::sqrt2));
    }
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(BiasGelu, cpu, kF32 | kF64, bias_gelu_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Gelu, cpu, kF32 | kF64, gelu_cpu)

}  // namespace porta::cpu
