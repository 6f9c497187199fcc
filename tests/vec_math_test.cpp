// The vectorized float exp/tanh/sigmoid/erf of kernels/cpu/vec_math.hpp against float64 libm:
// a dense sweep, random points, the range edges and NaN, checked with the accuracy contract
// stated in the header (so LSTM/GRU/Erf results stay within a few ulp of PyTorch's).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/vec_math.hpp"

namespace {

using Fn = void (*)(const float*, float*, int64_t);

std::vector<float> sample_points(float lo, float hi) {
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(lo + (hi - lo) * static_cast<float>(i) / 200000.0f);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int i = 0; i < 100000; ++i) x.push_back(d(rng));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 0.5f, -0.5f, 0.625f, -0.625f, lo, hi})
    x.push_back(v);
  return x;
}

// Every point within `abs_tol` absolute or `ulps` units in the last place (relative to the
// float64 result rounded to float), for results of magnitude >= 1e-6.
void check(Fn fn, double (*ref)(double), float lo, float hi, double abs_tol, double ulps, const char* name) {
  std::vector<float> x = sample_points(lo, hi), y(x.size());
  // Unaligned start and an odd length reach the vector loops' remainders.
  fn(x.data() + 1, y.data() + 1, static_cast<int64_t>(x.size()) - 1);
  fn(x.data(), y.data(), 1);
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double want = ref(static_cast<double>(x[i]));
    double err = std::fabs(static_cast<double>(y[i]) - want);
    float wf = static_cast<float>(want);
    double ulp = std::fabs(static_cast<double>(std::nextafter(wf, INFINITY)) - static_cast<double>(wf));
    bool ok = err <= abs_tol || err <= ulps * ulp;
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << name << "(" << x[i] << ") = " << y[i] << ", float64 gives " << want << " (error " << err
                    << ", " << err / ulp << " ulp)";
  }
  EXPECT_EQ(bad, 0) << name;
  float nan = std::numeric_limits<float>::quiet_NaN(), out = 0;
  fn(&nan, &out, 1);
  EXPECT_TRUE(std::isnan(out)) << name << " of NaN";
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double exp_ref(double x) { return std::exp(x); }
double tanh_ref(double x) { return std::tanh(x); }
double erf_ref(double x) { return std::erf(x); }

TEST(VecMath, ExpWithin2UlpOverTheFloatRange) {
  check(porta::cpu::vec::exp_f32, exp_ref, -87.0f, 88.0f, 0.0, 2.0, "exp");
  float edge[] = {-200.0f, 200.0f, 88.72f}, out[3];
  porta::cpu::vec::exp_f32(edge, out, 3);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_TRUE(std::isinf(out[1]));
  EXPECT_NEAR(out[2] / std::exp(static_cast<double>(88.72f)), 1.0, 3e-7);
}

TEST(VecMath, TanhMatchesFloat64) {
  check(porta::cpu::vec::tanh_f32, tanh_ref, -20.0f, 20.0f, 3e-7, 4.0, "tanh");
}

TEST(VecMath, SigmoidMatchesFloat64) {
  check(porta::cpu::vec::sigmoid_f32, sigmoid_ref, -30.0f, 30.0f, 3e-7, 4.0, "sigmoid");
}

TEST(VecMath, ErfMatchesFloat64) {
  check(porta::cpu::vec::erf_f32, erf_ref, -6.0f, 6.0f, 2e-7, 4.0, "erf");
}

}  // namespace
