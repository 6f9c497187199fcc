// porta cpu kernels — the matrix products LSTM and GRU share.
//
// Both ops first project every time step's input at once (one [seq*batch, input] x
// [input, gates*hidden] product), then per step multiply all batch entries' hidden states by
// R^T in one product. ONNX stores W and R as [gates*hidden, k], i.e. already transposed.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"

namespace porta::cpu {

/// Dot product of two contiguous runs of n values.
template <typename T>
inline T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t k = 0; k < n; ++k) acc += a[k] * b[k];
  return acc;
}

/// c[m, n] = a[m, :] . b[n, :] for row-major a [m, k], b [n, k], c [m, n] (rnn_gemm.cpp).
void gemm_abt(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k);
void gemm_abt(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k);

/// z[j] += sum_i h[i] * rt[i * g + j] for j < g, i < k: one batch entry's recurrent product
/// with R^T stored row-major [k, g] (rnn_recurrent.cpp). z must not alias h or rt.
void accumulate_recurrent(const float* h, const float* rt, float* z, int64_t k, int64_t g);
void accumulate_recurrent(const double* h, const double* rt, double* z, int64_t k, int64_t g);

/// out[m, r] = x[m, :] . w[r, :] + bias_a[r] + bias_b[r] for m < rows, r < outs (biases
/// optional: nullptr).
template <typename T>
void project(const T* x, const T* w, const T* bias_a, const T* bias_b, int64_t rows, int64_t k, int64_t outs,
             T* out) {
  gemm_abt(x, w, out, rows, outs, k);
  if (!bias_a && !bias_b) return;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t r = 0; r < outs; ++r) out[m * outs + r] += (bias_a ? bias_a[r] : T(0)) + (bias_b ? bias_b[r] : T(0));
}

template <typename T>
inline T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

/// p[i] = sigmoid(clip_to(p[i])) / tanh(clip_to(p[i])) over n values: vectorized for float
/// (kernels/cpu/custom_vmath.hpp), libm for double.
template <typename T>
inline void clip_run(T* p, int64_t n, double clip) {
  if (std::isinf(clip)) return;
  const T lo = static_cast<T>(-clip), hi = static_cast<T>(clip);
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] < lo ? lo : (p[i] > hi ? hi : p[i]);
}
template <typename T>
inline void sigmoid_run(T* p, int64_t n, double clip) {
  clip_run(p, n, clip);
  if constexpr (std::is_same_v<T, float>) vmath::sigmoid_f32(p, p, n);
  else for (int64_t i = 0; i < n; ++i) p[i] = T(1) / (T(1) + std::exp(-p[i]));
}
template <typename T>
inline void tanh_run(T* p, int64_t n, double clip) {
  clip_run(p, n, clip);
  if constexpr (std::is_same_v<T, float>) vmath::tanh_f32(p, p, n);
  else for (int64_t i = 0; i < n; ++i) p[i] = std::tanh(p[i]);
}

/// Clamps to [-clip, clip]; clip is +inf when the attribute is absent.
template <typename T>
inline T clip_to(T v, double clip) {
  return std::isinf(clip) ? v : std::clamp(v, static_cast<T>(-clip), static_cast<T>(clip));
}

/// Input i of a call as T*, or nullptr when absent.
template <typename T>
const T* optional_input(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.in(i).data<T>() : nullptr;
}
/// Output i as T*, or nullptr when the node does not produce it.
template <typename T>
T* optional_output(KernelContext& ctx, size_t i) {
  return i < ctx.outputs.size() && ctx.out(i).defined() ? ctx.out(i).data<T>() : nullptr;
}

}  // namespace porta::cpu
