// porta cpu kernels — porta's vectorized float32 math: elementwise exp, tanh, sigmoid, erf,
// log, sin, cos, floor, ceil and the f32 <-> f16 conversions, and the row loops of the
// kernels that fuse them (Softmax, BiasGelu, RmsNorm, ScaledDotProductAttention,
// NormalizeImage), row reductions and ArgMax/ArgMin. Users: the Erf, Log, Sin, Cos, Floor,
// Ceil and Cast kernels, the LSTM/GRU/RNN gates (sigmoid, tanh), the fused kernels above.
//
// Each function is compiled for AVX-512, AVX2+FMA and baseline x86-64 (custom_vmath.cpp
// includes the bodies three times under `#pragma GCC target`) and picked at run time, so the
// library runs on any x86-64 and uses 16-float vectors where the CPU has them. Each math
// function has one vector implementation (custom_vmath_impl.hpp), shared by its row loop and
// the fused loops: BiasGelu's erf is Erf's erf, Softmax's exp is exp_f32's exp. Arrays may
// have any length (tails are handled); inputs and outputs may alias only where a function
// says so.
//
// Accuracy, against float64 (tests/cpu_vmath_test.cpp; "measured": over every float of the
// range, at the AVX-512 / AVX2 levels, then baseline): exp within 2 ulp over [-87, 88] (0.94,
// 1.22 measured), 0 for x < -87.34 (results under FLT_MIN flushed), +inf above 88.72; tanh and
// sigmoid within 3e-7 absolute or 4 ulp (tanh 1.37 / 1.34 ulp, sigmoid 2.18 / 2.08 ulp
// measured); erf within 2 ulp everywhere (1.20 / 1.42 ulp, 7.1e-8 / 8.5e-8 absolute
// measured); log, sin, cos as stated below. NaN stays NaN.
#pragma once
#include <cstdint>

namespace porta::cpu::vmath {

/// y[i] = exp / tanh / sigmoid / erf of x[i] (y may alias x).
void exp_f32(const float* x, float* y, int64_t n);
void tanh_f32(const float* x, float* y, int64_t n);
void sigmoid_f32(const float* x, float* y, int64_t n);
void erf_f32(const float* x, float* y, int64_t n);
/// y[i] = x[i] * sigmoid(x[i]) (SiLU; y may alias x), with sigmoid_f32's sigmoid.
void swish_f32(const float* x, float* y, int64_t n);
/// y[i] = gelu(x[i]) by the erf or the tanh formula (y may alias x), as bias_gelu_*_f32 below
/// with no bias.
void gelu_erf_f32(const float* x, float* y, int64_t n);
void gelu_tanh_f32(const float* x, float* y, int64_t n);
/// Largest element (-inf for n = 0); NaN elements are ignored.
float max_f32(const float* x, int64_t n);
/// y[i] = exp(x[i] - shift) (y may alias x, or be null to only sum); returns the sum.
/// `prefetch`, when not null: n floats (e.g. the next row) to pull into the caches meanwhile.
float exp_shifted_sum_to_f32(const float* x, float shift, float* y, int64_t n, const float* prefetch = nullptr);
/// y[i] = bf16(exp(x[i] - shift)) for i < n (bits, round to nearest even) and 0 up to
/// `width`; returns the sum of the rounded values. For softmax rows whose products read the
/// probabilities in bf16: every x[i] - shift must be <= 0 (shift at least the row's max), and
/// exp is computed only as accurately as bf16 keeps it (relative error below 2.5e-6).
float exp_shifted_sum_to_bf16(const float* x, float shift, uint16_t* y, int64_t n, int64_t width);
/// In place: y[i] clamped to [lo, hi] (relu: lo 0, hi +inf); a NaN stays NaN.
void relu_clip_f32(float* y, int64_t n, float lo, float hi);
/// In place: y[i] * clamp(y[i] / 6 + 1/2, 0, 1) (HardSwish); a NaN stays NaN.
void hard_swish_f32(float* y, int64_t n);
/// x[i] *= factor in place.
void scale_f32(float* x, float factor, int64_t n);
/// Sum of x[i]^2 (float lanes, then added in double).
double sum_squares_f32(const float* x, int64_t n);
// `stream`: write y with non-temporal stores (when 16-byte aligned), for outputs much larger
// than the caches, so writing costs no read of the destination lines (see streaming_output).

/// y[i] = log(x[i]) within 2 ulp (libm for zeros, subnormals, negatives, infinities, NaN).
void log_f32(const float* x, float* y, int64_t n);
/// y[i] = sin(x[i]) / cos(x[i]) within 2 ulp (libm for |x| > 8192, infinities and NaN).
void sin_f32(const float* x, float* y, int64_t n);
void cos_f32(const float* x, float* y, int64_t n);
/// Largest (want_max) or smallest element; NaN when any element is NaN; -inf/+inf for n = 0.
float extreme_nan_f32(const float* x, int64_t n, bool want_max);
/// Sum of x[0, n) (float vector partial sums, added in double).
double sum_f32(const float* x, int64_t n);
/// Index of the largest (want_max) or smallest element of x[0, n), the first one or with
/// `last` the last one; a NaN wins over every number (numpy's rule). 0 for n = 0.
int64_t arg_extreme_f32(const float* x, int64_t n, bool want_max, bool last);
/// 16x16 block transpose of 32-bit elements: d[j * ds + i] = s[i * ss + j] (strides in elements).
void transpose16_b32(const uint32_t* s, int64_t ss, uint32_t* d, int64_t ds);
/// IEEE half <-> float (bit patterns in uint16_t), round to nearest even.
void f32_to_f16_n(const float* x, uint16_t* y, int64_t n);
void f16_to_f32_n(const uint16_t* x, float* y, int64_t n);
/// bfloat16 <-> float (bit patterns in uint16_t) as porta::f32_to_bf16 / bf16_to_f32 convert
/// one value (round to nearest even, a NaN stays a quiet NaN), vectorized for the CPU.
void f32_to_bf16_n(const float* x, uint16_t* y, int64_t n);
void bf16_to_f32_n(const uint16_t* x, float* y, int64_t n);
/// y[i] = floor(x[i]) / ceil(x[i]) (y may alias x).
void floor_f32(const float* x, float* y, int64_t n);
void ceil_f32(const float* x, float* y, int64_t n);
/// y[i] = (x[i] - a) - b, in that order (y may alias x).
void sub2_f32(const float* x, float a, float b, float* y, int64_t n, bool stream);
/// y[i] = x[i] * a + b (y may alias x).
void affine_f32(const float* x, float a, float b, float* y, int64_t n, bool stream);
/// y[i] = x[i] * factor * scale[i] (y may alias x).
void mul_scale_f32(const float* x, const float* scale, float factor, float* y, int64_t n, bool stream);
/// y[i] = gelu(x[i] + bias[i]), erf form (approximate = "none"), with erf_f32's erf.
void bias_gelu_erf_f32(const float* x, const float* bias, float* y, int64_t n, bool stream);
/// y[i] = gelu(x[i] + bias[i]), tanh form (approximate = "tanh"), with exp_f32's exp.
void bias_gelu_tanh_f32(const float* x, const float* bias, float* y, int64_t n, bool stream);
/// y[i] = x[i] * a + b for u8 x (one channel plane).
void affine_u8_f32(const uint8_t* x, float a, float b, float* y, int64_t n, bool stream);
/// Three channel planes from n interleaved u8 pixels (RGB): yc[i] = x[3i + c] * a[c] + b[c].
void affine_rgb_u8_f32(const uint8_t* x, const float* a, const float* b, float* y0, float* y1, float* y2,
                       int64_t n);

/// Whether an output of `bytes` should be streamed: beyond 16 MiB it cannot stay in cache for
/// the next op anyway, and skipping the line reads saves a third of the memory traffic.
inline bool streaming_output(int64_t bytes) { return bytes > (int64_t{16} << 20); }

}  // namespace porta::cpu::vmath
