// The per-instruction-set row loops of kernels/cpu/custom_vmath.hpp. Those that replace scalar
// code bit for bit: f32 <-> f16 conversion (F16C against porta's scalar conversion) and
// floor/ceil (vector rounding against libm), on every half value, random float bit patterns
// and the edge values (signed zeros, subnormals, the f16 overflow boundary, infinities, NaN).
// The approximations (exp, tanh, sigmoid, swish, erf, log, sin, cos) against float64 libm with the
// accuracy stated in the header, and BiasGelu's row loop against Erf's. Odd lengths and
// unaligned starts reach the scalar tails.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/custom_vmath.hpp"
#include "porta/dispatch.hpp"
#include "porta/dtype.hpp"

namespace {

namespace vmath = porta::cpu::vmath;

bool is_nan_f16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

std::vector<float> edge_and_random_floats() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, -65504.0f, 65519.0f, 65520.0f, 1e9f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f,
                          6.1035156e-5f, 6.0975552e-5f, 1e-40f, -1e-40f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f,
                          8388607.5f, -8388607.5f, 8388608.0f, 16777217.0f, 3.4e38f, -3.4e38f};
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> small(-70000.f, 70000.f);
  for (int i = 0; i < 200000; ++i) v.push_back(std::bit_cast<float>(bits(rng)));
  for (int i = 0; i < 200000; ++i) v.push_back(small(rng));
  v.push_back(1.0f);  // an odd count: the scalar tail runs
  return v;
}

TEST(CpuVmath, F16ToF32MatchesTheScalarConversionOnEveryHalf) {
  std::vector<uint16_t> h(65536 + 3);
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  std::vector<float> got(h.size());
  vmath::f16_to_f32_n(h.data(), got.data(), static_cast<int64_t>(h.size()));
  for (size_t i = 0; i < h.size(); ++i) {
    float want = porta::f16_to_f32(h[i]);
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << "half 0x" << std::hex << h[i];
    else EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want)) << "half 0x" << std::hex << h[i];
  }
}

TEST(CpuVmath, F32ToF16MatchesTheScalarConversion) {
  std::vector<float> x = edge_and_random_floats();
  std::vector<uint16_t> got(x.size());
  vmath::f32_to_f16_n(x.data(), got.data(), static_cast<int64_t>(x.size()));
  int mismatches = 0;
  for (size_t i = 0; i < x.size() && mismatches < 10; ++i) {
    uint16_t want = porta::f32_to_f16(x[i]);
    bool ok = is_nan_f16(want) ? is_nan_f16(got[i]) && (got[i] & 0x8000u) == (want & 0x8000u) : got[i] == want;
    if (!ok) {
      ++mismatches;
      ADD_FAILURE() << "f32 " << x[i] << " (0x" << std::hex << std::bit_cast<uint32_t>(x[i]) << "): got 0x" << got[i]
                    << ", scalar 0x" << want;
    }
  }
}

TEST(CpuVmath, FloorAndCeilMatchLibm) {
  std::vector<float> x = edge_and_random_floats();
  std::vector<float> f(x.size()), c(x.size());
  vmath::floor_f32(x.data(), f.data(), static_cast<int64_t>(x.size()));
  vmath::ceil_f32(x.data(), c.data(), static_cast<int64_t>(x.size()));
  int mismatches = 0;
  for (size_t i = 0; i < x.size() && mismatches < 10; ++i) {
    float wf = std::floor(x[i]), wc = std::ceil(x[i]);
    auto same = [](float a, float b) {
      return std::isnan(b) ? std::isnan(a) : std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
    };
    if (!same(f[i], wf) || !same(c[i], wc)) {
      ++mismatches;
      ADD_FAILURE() << "x " << x[i] << ": floor " << f[i] << " (libm " << wf << "), ceil " << c[i] << " (libm " << wc
                    << ")";
    }
  }
}

// Sin and Cos against double-precision libm: within 2 ulp of the rounded result, or 2^-24
// absolute where the result is near a zero of the function (the argument reduction's own
// error: |x| up to 8192 carries about that much absolute error into r); libm's own float
// result (bit for bit) beyond 8192, for infinities and NaN.
TEST(CpuVmath, SinCosWithinTwoUlpOfDoubleLibm) {
  std::vector<float> x;
  for (int i = -400000; i <= 400000; ++i) x.push_back(static_cast<float>(i) * (8192.0f / 400000.0f));
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> d(-8192.f, 8192.f), tiny(-1e-3f, 1e-3f);
  for (int i = 0; i < 200000; ++i) x.push_back(d(rng));
  for (int i = 0; i < 20000; ++i) x.push_back(tiny(rng));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1.5707964f, 3.1415927f, -3.1415927f, 8192.0f, -8192.0f, 8192.001f,
                  1e6f, -1e6f, 1e30f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    x.push_back(v);
  x.push_back(0.25f);  // odd count: the scalar tail runs
  for (bool cosine : {false, true}) {
    std::vector<float> y(x.size());
    (cosine ? vmath::cos_f32 : vmath::sin_f32)(x.data(), y.data(), static_cast<int64_t>(x.size()));
    int failures = 0;
    double worst_ulp = 0;
    for (size_t i = 0; i < x.size() && failures < 10; ++i) {
      double ref = cosine ? std::cos(static_cast<double>(x[i])) : std::sin(static_cast<double>(x[i]));
      bool ok;
      if (!(std::fabs(x[i]) <= 8192.0f)) {
        float lib = cosine ? std::cos(x[i]) : std::sin(x[i]);
        ok = std::isnan(lib) ? std::isnan(y[i]) : std::bit_cast<uint32_t>(y[i]) == std::bit_cast<uint32_t>(lib);
      } else {
        float r = static_cast<float>(ref);
        double ulp = std::nextafter(std::fabs(r), std::numeric_limits<float>::infinity()) - std::fabs(r);
        double err = std::fabs(static_cast<double>(y[i]) - ref);
        if (std::fabs(ref) > 1e-3) worst_ulp = std::max(worst_ulp, err / ulp);
        ok = err <= 2 * ulp || err <= 0x1p-24;
      }
      if (!ok) {
        ++failures;
        ADD_FAILURE() << (cosine ? "cos(" : "sin(") << x[i] << ") = " << y[i] << ", double libm " << ref;
      }
    }
    RecordProperty(cosine ? "cos_worst_ulp" : "sin_worst_ulp", std::to_string(worst_ulp));
    EXPECT_LE(worst_ulp, 2.0) << (cosine ? "cos" : "sin");
  }
}

// Log against double-precision libm within 2 ulp over the whole positive float range (every
// 997th bit pattern, plus random values near 1 where log is small), and libm's own results
// for zeros, subnormals, negatives, infinities and NaN.
TEST(CpuVmath, LogWithinTwoUlpOfDoubleLibm) {
  std::vector<float> x;
  for (uint32_t b = 0x00800000u; b < 0x7f800000u; b += 997) x.push_back(std::bit_cast<float>(b));
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> near1(0.9f, 1.1f);
  for (int i = 0; i < 100000; ++i) x.push_back(near1(rng));
  for (float v : {1.0f, 2.0f, 0.5f, 0.70710677f, 0.70710683f, 1.4142135f, 0.0f, -0.0f, 1e-40f, -1.0f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max()})
    x.push_back(v);
  x.push_back(3.0f);  // odd count
  std::vector<float> y(x.size());
  vmath::log_f32(x.data(), y.data(), static_cast<int64_t>(x.size()));
  int failures = 0;
  double worst = 0;
  for (size_t i = 0; i < x.size() && failures < 10; ++i) {
    bool ok;
    if (!(x[i] >= std::numeric_limits<float>::min() && x[i] <= std::numeric_limits<float>::max())) {
      float lib = std::log(x[i]);
      ok = std::isnan(lib) ? std::isnan(y[i]) : std::bit_cast<uint32_t>(y[i]) == std::bit_cast<uint32_t>(lib);
    } else {
      double ref = std::log(static_cast<double>(x[i]));
      float r = static_cast<float>(ref);
      double ulp = r == 0.0f ? std::numeric_limits<float>::denorm_min()
                             : std::nextafter(std::fabs(r), std::numeric_limits<float>::infinity()) - std::fabs(r);
      double err = std::fabs(static_cast<double>(y[i]) - ref);
      worst = std::max(worst, err / ulp);
      ok = err <= 2 * ulp;
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "log(" << x[i] << ") = " << y[i] << ", double libm " << std::log(static_cast<double>(x[i]));
    }
  }
  RecordProperty("log_worst_ulp", std::to_string(worst));
}

using RowFn = void (*)(const float*, float*, int64_t);

std::vector<float> sample_points(float lo, float hi) {
  std::vector<float> x;
  for (int i = 0; i <= 200000; ++i) x.push_back(lo + (hi - lo) * static_cast<float>(i) / 200000.0f);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> d(lo, hi);
  for (int i = 0; i < 100000; ++i) x.push_back(d(rng));
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, -1e-40f, 1e-6f, -1e-6f, 0.5f, -0.5f, 0.625f, -0.625f, 0.9f,
                  -0.9f, 0.89999998f, 3.92f, -3.92f, lo, hi})
    x.push_back(v);
  return x;
}

// Every point within `abs_tol` absolute or `ulps` units in the last place of the float64
// result rounded to float; NaN gives NaN. Returns the worst error in ulp.
double check_against_float64(RowFn fn, double (*ref)(double), float lo, float hi, double abs_tol, double ulps,
                             const char* name) {
  std::vector<float> x = sample_points(lo, hi), y(x.size());
  // An unaligned start and an odd length reach the vector loops' tails.
  fn(x.data() + 1, y.data() + 1, static_cast<int64_t>(x.size()) - 1);
  fn(x.data(), y.data(), 1);
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double want = ref(static_cast<double>(x[i]));
    double err = std::fabs(static_cast<double>(y[i]) - want);
    float wf = static_cast<float>(want);
    double ulp = wf == 0.0f ? std::numeric_limits<float>::denorm_min()
                            : std::fabs(static_cast<double>(std::nextafter(wf, INFINITY)) - static_cast<double>(wf));
    worst = std::max(worst, err / ulp);
    bool ok = err <= abs_tol || err <= ulps * ulp;
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << name << "(" << x[i] << ") = " << y[i] << ", float64 gives " << want << " (error " << err
                    << ", " << err / ulp << " ulp)";
  }
  EXPECT_EQ(bad, 0) << name;
  float nan = std::numeric_limits<float>::quiet_NaN(), out = 0;
  fn(&nan, &out, 1);
  EXPECT_TRUE(std::isnan(out)) << name << " of NaN";
  ::testing::Test::RecordProperty(std::string(name) + "_worst_ulp", std::to_string(worst));
  return worst;
}

double exp_ref(double x) { return std::exp(x); }
double tanh_ref(double x) { return std::tanh(x); }
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double erf_ref(double x) { return std::erf(x); }
double swish_ref(double x) { return x / (1.0 + std::exp(-x)); }

TEST(CpuVmath, ExpWithin2UlpOverTheFloatRange) {
  check_against_float64(vmath::exp_f32, exp_ref, -87.0f, 88.0f, 0.0, 2.0, "exp");
  const float inf = std::numeric_limits<float>::infinity();
  float edge[] = {-200.0f, 200.0f, 88.72f, -inf, inf}, out[5];
  vmath::exp_f32(edge, out, 5);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], inf);
  EXPECT_NEAR(out[2] / std::exp(static_cast<double>(88.72f)), 1.0, 3e-7);  // n = 128: 2^127 doubled
  EXPECT_EQ(out[3], 0.0f);
  EXPECT_EQ(out[4], inf);
}

// The softmax rows of bf16 attention: every value is exp(x - shift) rounded to bf16, equal to
// the correctly rounded float64 value or one bf16 step from it (only where the exact value is
// within 2.5e-6 relative of a rounding midpoint), 0 for -inf and below the float range, zeros
// up to the width, and the returned sum is the sum of the rounded values. Row lengths cover
// the 32-wide loop, the 16-wide one and the tail.
TEST(CpuVmath, ExpShiftedSumToBf16) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-30.f, 5.f);
  const float inf = std::numeric_limits<float>::infinity();
  auto bf16_value = [](uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); };
  for (int64_t n : {0, 1, 7, 16, 17, 31, 32, 33, 48, 100, 512, 515}) {
    SCOPED_TRACE(n);
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    if (n > 2) x[1] = -inf, x[2] = -1e30f;  // a masked key, and one far below exp's range
    float shift = -inf;
    for (float v : x) shift = std::max(shift, v);
    if (n == 0) shift = 0;
    const int64_t width = n + 5;
    std::vector<uint16_t> y(static_cast<size_t>(width), 0xffff);  // poisoned
    const float sum = vmath::exp_shifted_sum_to_bf16(x.data(), shift, y.data(), n, width);
    double rounded_sum = 0;
    for (int64_t i = 0; i < width; ++i) {
      const float got = bf16_value(y[i]);
      if (i >= n) {
        EXPECT_EQ(y[i], 0) << "past n, at " << i;
        continue;
      }
      const double exact = std::exp(static_cast<double>(x[i]) - shift);
      const float want = porta::bf16_to_f32(porta::f32_to_bf16(static_cast<float>(exact)));
      if (exact < 1e-37) {
        EXPECT_LE(got, 1e-37f) << "x " << x[i];
      } else if (got != want) {  // a near-tie: the neighbour, and the exact value near the midpoint
        EXPECT_NEAR(got, want, std::ldexp(std::abs(want), -7)) << "x " << x[i];
        const double mid = (static_cast<double>(got) + want) / 2;
        EXPECT_LT(std::abs(exact - mid) / exact, 5e-6) << "x " << x[i] << ": not a near-tie";
      }
      rounded_sum += got;
    }
    EXPECT_NEAR(sum, rounded_sum, 1e-6 * std::max(1.0, rounded_sum));
  }
}

// The clamp activations (fused into convs through activate_f32): bit for bit the scalar
// formulas, NaN kept, signed zeros and infinities as they give, every tail length.
TEST(CpuVmath, ReluClipAndHardSwishMatchTheScalarFormulas) {
  std::vector<float> v = edge_and_random_floats();
  for (float x : {-3.0f, 3.0f, -2.9999998f, 3.0000002f, 6.0f, -6.0f}) v.push_back(x);
  auto same = [](float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b)); };
  for (int64_t n : {int64_t{0}, int64_t{5}, int64_t{16}, int64_t{37}, static_cast<int64_t>(v.size())}) {
    std::vector<float> relu(v.begin(), v.begin() + n), clip = relu, hs = relu;
    vmath::relu_clip_f32(relu.data(), n, 0.0f, std::numeric_limits<float>::infinity());
    vmath::relu_clip_f32(clip.data(), n, -1.5f, 6.0f);
    vmath::hard_swish_f32(hs.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float x = v[static_cast<size_t>(i)];
      const float want_relu = x < 0.0f ? 0.0f : x;
      float c = x < -1.5f ? -1.5f : x;
      c = c > 6.0f ? 6.0f : c;
      float g = x / 6.0f + 0.5f;
      const float want_hs = x * (std::isnan(g) ? g : g < 0.0f ? 0.0f : g > 1.0f ? 1.0f : g);
      ASSERT_TRUE(same(relu[i], want_relu)) << "relu(" << x << ") = " << relu[i];
      ASSERT_TRUE(same(clip[i], c)) << "clip(" << x << ") = " << clip[i];
      ASSERT_TRUE(same(hs[i], want_hs)) << "hard_swish(" << x << ") = " << hs[i] << ", want " << want_hs;
    }
  }
}

TEST(CpuVmath, TanhAndSigmoidMatchFloat64) {
  check_against_float64(vmath::tanh_f32, tanh_ref, -20.0f, 20.0f, 3e-7, 4.0, "tanh");
  check_against_float64(vmath::sigmoid_f32, sigmoid_ref, -30.0f, 30.0f, 3e-7, 4.0, "sigmoid");
  const float inf = std::numeric_limits<float>::infinity();
  float edge[] = {-inf, inf, -100.0f, 100.0f}, out[4];
  vmath::tanh_f32(edge, out, 4);
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[1], 1.0f);
  vmath::sigmoid_f32(edge, out, 4);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 1.0f);
}

// Swish (x * sigmoid(x), the loop the cpu Conv runs after its primitive): sigmoid's error
// scaled by |x|, and the infinities as float64 gives them.
TEST(CpuVmath, SwishMatchesFloat64) {
  check_against_float64(vmath::swish_f32, swish_ref, -30.0f, 30.0f, 3e-7, 6.0, "swish");
  const float inf = std::numeric_limits<float>::infinity();
  float edge[] = {inf, -100.0f, 100.0f, -inf}, out[4];
  vmath::swish_f32(edge, out, 4);
  EXPECT_EQ(out[0], inf);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 100.0f);
  EXPECT_TRUE(std::isnan(out[3]));  // -inf * sigmoid(-inf) = -inf * 0
}

// erf within 2 ulp everywhere, no absolute slack: small arguments keep their relative
// accuracy (erf(x) ~ 1.128 x) and values near +-1 are exact to the float.
TEST(CpuVmath, ErfWithin2UlpOfFloat64) {
  check_against_float64(vmath::erf_f32, erf_ref, -6.0f, 6.0f, 0.0, 2.0, "erf");
  const float inf = std::numeric_limits<float>::infinity();
  float edge[] = {-inf, inf, -0.0f, 100.0f, -4.0f}, out[5];
  vmath::erf_f32(edge, out, 5);
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_TRUE(out[2] == 0.0f && std::signbit(out[2]));
  EXPECT_EQ(out[3], 1.0f);
  EXPECT_EQ(out[4], -1.0f);
}

// BiasGelu's fused row loop uses Erf's erf: gelu(h) = 0.5 h (1 + erf(h / sqrt 2)) from
// bias_gelu_erf_f32 equals the same formula built on erf_f32, bit for bit.
TEST(CpuVmath, BiasGeluErfFormUsesErfsErf) {
  std::vector<float> x = sample_points(-8.0f, 8.0f), bias(x.size()), fused(x.size()), h(x.size()), u(x.size()),
                     e(x.size());
  for (size_t i = 0; i < x.size(); ++i) bias[i] = static_cast<float>(i % 7) * 0.125f - 0.375f;
  vmath::bias_gelu_erf_f32(x.data(), bias.data(), fused.data(), static_cast<int64_t>(x.size()), false);
  for (size_t i = 0; i < x.size(); ++i) {
    h[i] = x[i] + bias[i];
    u[i] = h[i] * 0.70710678118654752f;
  }
  vmath::erf_f32(u.data(), e.data(), static_cast<int64_t>(x.size()));
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 5; ++i) {
    float want = 0.5f * h[i] * (1.0f + e[i]);
    if (std::bit_cast<uint32_t>(fused[i]) != std::bit_cast<uint32_t>(want)) {
      ++bad;
      ADD_FAILURE() << "gelu(" << h[i] << "): fused " << fused[i] << ", from erf_f32 " << want;
    }
  }
}

// ArgMax/ArgMin rows against a scalar scan with numpy's rules (NaN wins; first or last of
// equal extremes), on rows full of ties, with NaNs and infinities, of every length to 70 and
// a long one, so both the vector body and the tails decide.
TEST(CpuVmath, ArgExtremeMatchesAScalarScan) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> small(-3, 3), special(0, 40);
  auto scalar = [](const std::vector<float>& x, bool want_max, bool last) {
    int64_t at = 0;
    for (int64_t k = 1; k < static_cast<int64_t>(x.size()); ++k) {
      float v = x[k], best = x[at];
      bool better;
      if (std::isnan(best)) better = last && std::isnan(v);
      else if (std::isnan(v)) better = true;
      else if (v == best) better = last;
      else better = want_max ? v > best : v < best;
      if (better) at = k;
    }
    return at;
  };
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 70; ++n) lengths.push_back(n);
  lengths.push_back(1000);
  for (int64_t n : lengths)
    for (int rep = 0; rep < 20; ++rep) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) {
        int s = special(rng);
        v = s == 0 ? std::numeric_limits<float>::quiet_NaN()
            : s == 1 ? std::numeric_limits<float>::infinity()
            : s == 2 ? -std::numeric_limits<float>::infinity()
                     : static_cast<float>(small(rng));
      }
      for (bool want_max : {true, false})
        for (bool last : {false, true})
          ASSERT_EQ(vmath::arg_extreme_f32(x.data(), n, want_max, last), scalar(x, want_max, last))
              << "n " << n << (want_max ? " max" : " min") << (last ? " last" : " first");
    }
}

// Row max/min with NaN propagation and the vector row sum, for every length to 70 and a long
// row: a NaN at any position (vector body or tail) makes the extreme NaN; the sum stays within
// float rounding of the double sum.
TEST(CpuVmath, RowExtremeAndSum) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> d(-100.f, 100.f);
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 70; ++n) lengths.push_back(n);
  lengths.push_back(1000);
  for (int64_t n : lengths) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = d(rng);
    double want_sum = 0, want_max = -INFINITY, want_min = INFINITY, abs_sum = 0;
    for (float v : x) want_sum += v, abs_sum += std::fabs(v), want_max = std::max<double>(want_max, v),
                                     want_min = std::min<double>(want_min, v);
    EXPECT_NEAR(vmath::sum_f32(x.data(), n), want_sum, 1e-6 * abs_sum + 1e-12) << "n " << n;
    EXPECT_EQ(vmath::extreme_nan_f32(x.data(), n, true), static_cast<float>(want_max)) << "n " << n;
    EXPECT_EQ(vmath::extreme_nan_f32(x.data(), n, false), static_cast<float>(want_min)) << "n " << n;
    for (int64_t at = 0; at < n; at += std::max<int64_t>(1, n / 7)) {
      std::vector<float> y = x;
      y[static_cast<size_t>(at)] = std::numeric_limits<float>::quiet_NaN();
      EXPECT_TRUE(std::isnan(vmath::extreme_nan_f32(y.data(), n, true))) << "n " << n << " NaN at " << at;
      EXPECT_TRUE(std::isnan(vmath::extreme_nan_f32(y.data(), n, false))) << "n " << n << " NaN at " << at;
    }
  }
}

// ReduceMax/Min over columns (axis 0) and rows of f32 on cpu: a NaN anywhere in a column or
// row makes that result NaN, other results are the exact extreme.
TEST(CpuReduce, MaxMinPropagateNaNOnRowsAndColumns) {
  const int64_t rows = 37, cols = 300;  // columns past one vector chunk, odd rows
  std::vector<double> v(static_cast<size_t>(rows * cols));
  std::mt19937 rng(21);
  std::uniform_real_distribution<double> d(-50.0, 50.0);
  for (double& x : v) x = static_cast<float>(d(rng));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t c : {0, 7, 150, 299}) v[static_cast<size_t>((c * 13 % rows) * cols + c)] = nan;
  for (int64_t r : {3, 36}) v[static_cast<size_t>(r * cols + 200 + r)] = nan;
  porta::Tensor x = porta::Tensor::from_values(v, {rows, cols}, porta::DType::f32);
  for (const char* op : {"ReduceMax", "ReduceMin"})
    for (int64_t axis : {0, 1}) {
      porta::Attributes a{{"axes", std::vector<int64_t>{axis}}, {"keepdims", int64_t{0}}};
      std::vector<double> got = porta::call_op(op, {x}, a).at(0).to_doubles();
      int64_t outer = axis == 0 ? cols : rows, len = axis == 0 ? rows : cols;
      ASSERT_EQ(static_cast<int64_t>(got.size()), outer);
      for (int64_t o = 0; o < outer; ++o) {
        double want = std::string(op) == "ReduceMax" ? -INFINITY : INFINITY;
        bool has_nan = false;
        for (int64_t k = 0; k < len; ++k) {
          double e = axis == 0 ? v[static_cast<size_t>(k * cols + o)] : v[static_cast<size_t>(o * cols + k)];
          has_nan |= std::isnan(e);
          want = std::string(op) == "ReduceMax" ? std::max(want, e) : std::min(want, e);
        }
        if (has_nan) EXPECT_TRUE(std::isnan(got[o])) << op << " axis " << axis << " at " << o;
        else EXPECT_EQ(got[o], want) << op << " axis " << axis << " at " << o;
      }
    }
}

}  // namespace
