// porta cpu kernels — the vectorized loops of custom_vmath.hpp, compiled three times
// (x86-64-v4 = AVX-512, x86-64-v3 = AVX2 + FMA, baseline x86-64) from custom_vmath_impl.hpp
// and picked once at run time from what the CPU supports.
#include "kernels/cpu/custom_vmath.hpp"

#include "kernels/cpu/vector_width.hpp"
#include "porta/dtype.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#pragma GCC diagnostic ignored "-Wpsabi"  // vector helpers are always inlined

#define PORTA_INLINE static inline __attribute__((always_inline))

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define PORTA_VMATH_LEVEL v4
#define PORTA_VMATH_LANES 16
#define PORTA_VMATH_F16C 1  // x86-64-v3 and up have F16C (the pragma does not define __F16C__)
#include "kernels/cpu/custom_vmath_impl.hpp"
#undef PORTA_VMATH_F16C
#undef PORTA_VMATH_LEVEL
#undef PORTA_VMATH_LANES
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define PORTA_VMATH_LEVEL v3
#define PORTA_VMATH_LANES 8
#define PORTA_VMATH_F16C 1
#include "kernels/cpu/custom_vmath_impl.hpp"
#undef PORTA_VMATH_F16C
#undef PORTA_VMATH_LEVEL
#undef PORTA_VMATH_LANES
#pragma GCC pop_options

#define PORTA_VMATH_LEVEL base
#define PORTA_VMATH_LANES 4
#define PORTA_VMATH_F16C 0
#include "kernels/cpu/custom_vmath_impl.hpp"
#undef PORTA_VMATH_F16C
#undef PORTA_VMATH_LEVEL
#undef PORTA_VMATH_LANES

namespace porta::cpu::vmath {
namespace {

// The CPU's level, lowered to the vector width cap of vector_width.hpp when one is set (tests
// of the narrower levels on a wider CPU).
int level() {
  static const int l = __builtin_cpu_supports("x86-64-v4") ? 4 : __builtin_cpu_supports("x86-64-v3") ? 3 : 0;
  const int cap = vector_bytes_limit();
  if (cap <= 0) return l;
  return std::min(l, cap >= 64 ? 4 : cap >= 32 ? 3 : 0);
}

}  // namespace

#define PORTA_VMATH_DISPATCH(call) \
  switch (level()) {               \
    case 4: return v4::call;       \
    case 3: return v3::call;       \
    default: return base::call;    \
  }

void exp_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(exp_f32(x, y, n)) }
void tanh_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(tanh_f32(x, y, n)) }
void sigmoid_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(sigmoid_f32(x, y, n)) }
void swish_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(swish_f32(x, y, n)) }
void erf_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(erf_f32(x, y, n)) }
void gelu_erf_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(gelu_erf_f32(x, y, n)) }
void gelu_tanh_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(gelu_tanh_f32(x, y, n)) }
float max_f32(const float* x, int64_t n) { PORTA_VMATH_DISPATCH(max_f32(x, n)) }
float exp_shifted_sum_to_f32(const float* x, float shift, float* y, int64_t n, const float* prefetch) {
  PORTA_VMATH_DISPATCH(exp_shifted_sum_to_f32(x, shift, y, n, prefetch))
}
float exp_shifted_sum_to_bf16(const float* x, float shift, uint16_t* y, int64_t n, int64_t width) {
  PORTA_VMATH_DISPATCH(exp_shifted_sum_to_bf16(x, shift, y, n, width))
}
void relu_clip_f32(float* y, int64_t n, float lo, float hi) { PORTA_VMATH_DISPATCH(relu_clip_f32(y, n, lo, hi)) }
void hard_swish_f32(float* y, int64_t n) { PORTA_VMATH_DISPATCH(hard_swish_f32(y, n)) }
float extreme_nan_f32(const float* x, int64_t n, bool want_max) {
  PORTA_VMATH_DISPATCH(extreme_nan_f32(x, n, want_max))
}
double sum_f32(const float* x, int64_t n) { PORTA_VMATH_DISPATCH(sum_f32(x, n)) }
int64_t arg_extreme_f32(const float* x, int64_t n, bool want_max, bool last) {
  PORTA_VMATH_DISPATCH(arg_extreme_f32(x, n, want_max, last))
}
void log_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(log_f32(x, y, n)) }
void sin_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(sin_f32(x, y, n)) }
void cos_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(cos_f32(x, y, n)) }
void transpose16_b32(const uint32_t* s, int64_t ss, uint32_t* d, int64_t ds) {
  PORTA_VMATH_DISPATCH(transpose16_b32(s, ss, d, ds))
}
void f32_to_f16_n(const float* x, uint16_t* y, int64_t n) { PORTA_VMATH_DISPATCH(f32_to_f16_n(x, y, n)) }
void f16_to_f32_n(const uint16_t* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(f16_to_f32_n(x, y, n)) }
void f32_to_bf16_n(const float* x, uint16_t* y, int64_t n) { PORTA_VMATH_DISPATCH(f32_to_bf16_n(x, y, n)) }
void bf16_to_f32_n(const uint16_t* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(bf16_to_f32_n(x, y, n)) }
void floor_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(floor_f32(x, y, n)) }
void ceil_f32(const float* x, float* y, int64_t n) { PORTA_VMATH_DISPATCH(ceil_f32(x, y, n)) }
void sub2_f32(const float* x, float a, float b, float* y, int64_t n, bool stream) {
  PORTA_VMATH_DISPATCH(sub2_f32(x, a, b, y, n, stream))
}
void affine_f32(const float* x, float a, float b, float* y, int64_t n, bool stream) {
  PORTA_VMATH_DISPATCH(affine_f32(x, a, b, y, n, stream))
}
void scale_f32(float* x, float factor, int64_t n) { PORTA_VMATH_DISPATCH(scale_f32(x, factor, n)) }
double sum_squares_f32(const float* x, int64_t n) { PORTA_VMATH_DISPATCH(sum_squares_f32(x, n)) }
void mul_scale_f32(const float* x, const float* scale, float factor, float* y, int64_t n, bool stream) {
  PORTA_VMATH_DISPATCH(mul_scale_f32(x, scale, factor, y, n, stream))
}
void bias_gelu_erf_f32(const float* x, const float* bias, float* y, int64_t n, bool stream) {
  PORTA_VMATH_DISPATCH(bias_gelu_erf_f32(x, bias, y, n, stream))
}
void bias_gelu_tanh_f32(const float* x, const float* bias, float* y, int64_t n, bool stream) {
  PORTA_VMATH_DISPATCH(bias_gelu_tanh_f32(x, bias, y, n, stream))
}
void affine_u8_f32(const uint8_t* x, float a, float b, float* y, int64_t n, bool stream) {
  PORTA_VMATH_DISPATCH(affine_u8_f32(x, a, b, y, n, stream))
}
void affine_rgb_u8_f32(const uint8_t* x, const float* a, const float* b, float* y0, float* y1, float* y2,
                       int64_t n) {
  PORTA_VMATH_DISPATCH(affine_rgb_u8_f32(x, a, b, y0, y1, y2, n))
}

#undef PORTA_VMATH_DISPATCH

}  // namespace porta::cpu::vmath
