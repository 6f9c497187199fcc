// LayerNormalization on cpu: rows of X seen as outer x inner (inner = product of
// X.shape[axis:]), with Scale / B expanded to inner when they broadcast. Own loops: f32 in
// float with double sums (two passes: mean, then squared deviations), f64 in double.
// oneDNN's layer_normalization did the f32 rows before; on the small rows of the example
// models (4x128, 32x64) its per-call cost (argument maps, two internal allocations per
// execution) was most of the time: mlp's three LayerNorms took 2-3 us each.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/dnn_util.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "ops/common.hpp"

namespace porta::cpu {
namespace {

bool wants(const KernelContext& ctx, size_t i) { return ctx.outputs.size() > i && ctx.outputs[i].defined(); }

void layer_norm_loop(KernelContext& ctx, const double* scale, const double* bias, int64_t outer,
                     int64_t inner, double eps) {
  const double* x = ctx.in(0).data<double>();
  double* y = ctx.out(0).data<double>();
  float* mean_out = wants(ctx, 1) ? ctx.out(1).data<float>() : nullptr;
  float* inv_out = wants(ctx, 2) ? ctx.out(2).data<float>() : nullptr;
  parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const double* row = x + r * inner;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += row[j];
      mean /= static_cast<double>(inner);
      for (int64_t j = 0; j < inner; ++j) var += (row[j] - mean) * (row[j] - mean);
      double inv = 1.0 / std::sqrt(var / static_cast<double>(inner) + eps);
      for (int64_t j = 0; j < inner; ++j)
        y[r * inner + j] = (row[j] - mean) * inv * scale[j] + (bias ? bias[j] : 0.0);
      if (mean_out) mean_out[r] = static_cast<float>(mean);
      if (inv_out) inv_out[r] = static_cast<float>(inv);
    }
  });
}

// One f32 row; mean and 1 / sqrt(variance + eps) are written where asked for.
PORTA_CPU_CLONES
void layer_norm_row_f32(const float* x, float* y, const float* scale, const float* bias, int64_t n, float eps,
                        float* mean_out, float* inv_out) {
  double sum = 0;  // double sums: long rows keep their precision
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += x[j];
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  double squares = 0;
#pragma omp simd reduction(+ : squares)
  for (int64_t j = 0; j < n; ++j) squares += static_cast<double>((x[j] - mean) * (x[j] - mean));
  const float inv = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n) + eps));
  if (bias) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * inv * scale[j] + bias[j];
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * inv * scale[j];
  }
  if (mean_out) *mean_out = mean;
  if (inv_out) *inv_out = inv;
}

void layer_norm_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "LayerNormalization");
  Shape norm(x.shape().begin() + axis, x.shape().end());
  int64_t inner = shape_numel(norm), outer = inner == 0 ? 0 : x.numel() / inner;
  if (inner == 0) {  // statistics of nothing are 0/0; Y is empty, Mean/InvStdDev are not
    for (size_t k = 1; k < 3; ++k)
      if (wants(ctx, k))
        visit_dtype(ctx.out(k).dtype(), [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_floating_point_v<T>) {
            T* p = ctx.out(k).data<T>();
            std::fill(p, p + ctx.out(k).numel(), std::numeric_limits<T>::quiet_NaN());
          }
        });
    return;
  }
  if (x.numel() == 0) return;
  double eps = ctx.attrs->get_float("epsilon");
  Tensor scale = ctx.in(1).expand(norm).contiguous();
  Tensor bias = ctx.has_input(2) ? ctx.in(2).expand(norm).contiguous() : Tensor();
  if (x.dtype() == DType::f64)
    return layer_norm_loop(ctx, scale.data<double>(), bias.defined() ? bias.data<double>() : nullptr,
                           outer, inner, eps);
  const float* x_data = x.data<float>();
  float* y = ctx.out(0).data<float>();
  const float* sc = scale.data<float>();
  const float* b = bias.defined() ? bias.data<float>() : nullptr;
  float* mean_out = wants(ctx, 1) ? ctx.out(1).data<float>() : nullptr;
  float* inv_out = wants(ctx, 2) ? ctx.out(2).data<float>() : nullptr;
  parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      layer_norm_row_f32(x_data + r * inner, y + r * inner, sc, b, inner, static_cast<float>(eps),
                         mean_out ? mean_out + r : nullptr, inv_out ? inv_out + r : nullptr);
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(LayerNormalization, cpu, kF32 | kF64, layer_norm_cpu)

}  // namespace porta::cpu
