// porta cpu kernels — float exp, tanh, sigmoid and erf over arrays, vectorized.
//
// libm's expf/tanhf/erff are scalar calls the compiler cannot vectorize; they dominated the
// LSTM (tanh/sigmoid per gate) and GELU (Erf) profiles. These versions are branch-free
// polynomial evaluations that the compiler turns into SIMD code, built for AVX-512, AVX2+FMA
// and baseline x86-64 and picked at run time (GCC target_clones).
//
// Accuracy contract (checked against float64 in tests/vec_math_test.cpp): exp within 2 ulp over
// [-87, 88]; tanh and sigmoid within 3e-7 absolute and 4 ulp relative where |result| >= 1e-6;
// erf within 2e-7 absolute and 4 ulp relative where |erf| >= 1e-6 (polynomial for |x| < 1,
// A&S 7.1.26 form beyond). NaN propagates. exp flushes results below FLT_MIN to 0 (x < -87.34)
// and gives +inf above 88.72.
#pragma once
#include <cstdint>

namespace porta::cpu::vec {

/// dst[i] = f(src[i]) for i < n; src and dst may be the same array.
void exp_f32(const float* src, float* dst, int64_t n);
void tanh_f32(const float* src, float* dst, int64_t n);
void sigmoid_f32(const float* src, float* dst, int64_t n);
void erf_f32(const float* src, float* dst, int64_t n);

}  // namespace porta::cpu::vec
