// porta cpu kernels — vectorizable float exp/tanh/sigmoid/erf (contract in vec_math.hpp).
//
// exp: x = n ln2 + r with |r| <= ln2/2 (n rounded to nearest) (ln2 split in two parts so r is exact enough), e^r by
// a degree-6 polynomial (the classic Cephes expf coefficients), 2^n built in the exponent bits.
// tanh: odd polynomial for |x| < 0.625 (no cancellation near 0), 1 - 2 / (e^{2|x|} + 1) beyond.
// erf: Taylor series of degree 25 for |x| < 1, 1 - P(t) e^{-x^2} with t = 1 / (1 + p|x|)
// (Abramowitz & Stegun 7.1.26) beyond. Both branches are computed and one is selected, so the
// loops stay branch-free and vectorize.
#include "kernels/cpu/vec_math.hpp"

#include "kernels/cpu/target_clones.hpp"

// Both arms of each select are computed: with the default -ftrapping-math GCC will not
// if-convert (and so not vectorize) them. No code here relies on floating-point traps.
#pragma GCC optimize("no-trapping-math", "no-math-errno")

#include <bit>
#include <cmath>

namespace porta::cpu::vec {
namespace {

// Plain compares and integer conversions only: libm calls (floor, fmin) would keep the loops
// scalar on baseline x86-64.
inline float exp_one(float x) {
  float clamped = x < -87.33654f ? -87.33654f : x;
  clamped = clamped > 88.72283f ? 88.72283f : clamped;
  // n = round(x / ln2) by the 1.5 * 2^23 trick: adding it leaves n in the low mantissa bits.
  const float magic = 12582912.0f;
  const float biased = clamped * 1.44269504088896341f + magic;
  const float n = biased - magic;
  const int32_t n_int = std::bit_cast<int32_t>(biased) - std::bit_cast<int32_t>(magic);
  float r = clamped - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  // 2^n as a float: for n = 128 (x near the top of the range) build 2^127 and double after.
  const int32_t high = n_int > 0 ? 1 : 0;
  const float scale = std::bit_cast<float>((n_int - high + 127) << 23);
  float out = y * scale * (high ? 2.0f : 1.0f);
  out = x > 88.72283f ? INFINITY : out;
  out = x < -87.33654f ? 0.0f : out;
  return x != x ? x : out;  // NaN in, NaN out
}

inline float tanh_one(float x) {
  const float ax = std::fabs(x);
  const float z = x * x;
  float small = -5.70498872745e-3f;
  small = small * z + 2.06390887954e-2f;
  small = small * z - 5.37397155531e-2f;
  small = small * z + 1.33314422036e-1f;
  small = small * z - 3.33332819422e-1f;
  small = small * z * x + x;
  const float e = exp_one(2.0f * ax > 88.0f ? 88.0f : 2.0f * ax);
  const float big = std::copysign(1.0f - 2.0f / (e + 1.0f), x);
  const float out = ax < 0.625f ? small : big;
  return x != x ? x : out;
}

inline float sigmoid_one(float x) { return 1.0f / (1.0f + exp_one(-x)); }

inline float erf_one(float x) {
  const float ax = std::fabs(x);
  // |x| < 1: 2/sqrt(pi) * sum_k (-1)^k x^(2k+1) / (k! (2k+1)), k <= 12 (the next term is
  // below 1e-10 at |x| = 1).
  const float z = x * x;
  float s = 1.0f / 11975040000.0f;
  s = s * z - 1.0f / 918086400.0f;
  s = s * z + 1.0f / 76204800.0f;
  s = s * z - 1.0f / 6894720.0f;
  s = s * z + 1.0f / 685440.0f;
  s = s * z - 1.0f / 75600.0f;
  s = s * z + 1.0f / 9360.0f;
  s = s * z - 1.0f / 1320.0f;
  s = s * z + 1.0f / 216.0f;
  s = s * z - 1.0f / 42.0f;
  s = s * z + 1.0f / 10.0f;
  s = s * z - 1.0f / 3.0f;
  s = s * z + 1.0f;
  const float small = 1.1283791670955126f * x * s;
  // |x| >= 1: 1 - t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) e^{-x^2}, t = 1 / (1 + p |x|).
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  const float big = std::copysign(1.0f - q * t * exp_one(-z), x);
  const float out = ax < 1.0f ? small : big;
  return x != x ? x : out;
}

}  // namespace


PORTA_CPU_CLONES void exp_f32(const float* src, float* dst, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = exp_one(src[i]);
}
PORTA_CPU_CLONES void tanh_f32(const float* src, float* dst, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = tanh_one(src[i]);
}
PORTA_CPU_CLONES void sigmoid_f32(const float* src, float* dst, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = sigmoid_one(src[i]);
}
PORTA_CPU_CLONES void erf_f32(const float* src, float* dst, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) dst[i] = erf_one(src[i]);
}

}  // namespace porta::cpu::vec
