// Long sums of signed values on every device: means, sums, LayerNormalization and
// SqueezeExcite's channel means over rows whose first element lies far from the row's mean.
// Kernels that add deviations from a row's first element drift with such a row (each term
// carries the offset, the running sum grows with the row) unless their compensation survives
// the shader compiler, which may simplify Kahan's (t - s) - v to 0 where the variables are not
// `precise`. A backward-stable sum keeps its error near eps * max|x| whatever the row's length;
// the bounds below are a few times that, and the drifting sums miss them by several times.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "porta/porta.hpp"
#include "test_util.hpp"

namespace porta {
namespace {

using namespace porta::test;

constexpr double kEps = std::numeric_limits<float>::epsilon();
constexpr double kOutlier = 3.0;

// rows x n values in [-2, 2], each row's first element kOutlier, rounded to f32.
std::vector<double> outlier_rows(int64_t rows, int64_t n) {
  std::vector<double> v = random_f32({rows, n}, -2.0, 2.0).to_doubles();
  for (int64_t r = 0; r < rows; ++r) v[static_cast<size_t>(r * n)] = kOutlier;
  return Tensor::from_values(v, {rows, n}, DType::f32).to_doubles();
}

std::vector<double> row_means(const std::vector<double>& x, int64_t rows, int64_t n) {
  std::vector<double> m(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += x[static_cast<size_t>(r * n + i)];
    m[static_cast<size_t>(r)] = s / static_cast<double>(n);
  }
  return m;
}

std::vector<double> host(const Tensor& t) { return t.to(Device::cpu()).to_doubles(); }

class SummationAccuracy : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    std::string why = device_unusable(GetParam());
    if (!why.empty()) GTEST_SKIP() << GetParam().str() << " unavailable: " << why;
  }
};

// ReduceMean, ReduceSum and GlobalAveragePool: the mean's error against eps * max|x|.
TEST_P(SummationAccuracy, MeansAndSumsOfLongRows) {
  const Device d = GetParam();
  const int64_t rows = 6;
  for (int64_t n : {int64_t{1001}, int64_t{8192}, int64_t{8195}}) {
    const std::vector<double> x = outlier_rows(rows, n);
    const std::vector<double> mean = row_means(x, rows, n);
    const Tensor xd = Tensor::from_values(x, {1, rows, n}, DType::f32).to(d);
    const std::vector<double> rm =
        host(call_op("ReduceMean", {xd}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{0}}}).at(0));
    const std::vector<double> rs =
        host(call_op("ReduceSum", {xd, Tensor::from_values({-1.0}, {1}, DType::i64).to(d)}, {{"keepdims", int64_t{0}}})
                 .at(0));
    const std::vector<double> gp = host(call_op("GlobalAveragePool", {xd}).at(0));
    const double bound = 4 * kEps * kOutlier;
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = static_cast<size_t>(r);
      const double nd = static_cast<double>(n);
      EXPECT_LE(std::abs(rm[i] - mean[i]), bound) << "ReduceMean, row " << r << " of " << n << " on " << d.str();
      EXPECT_LE(std::abs(rs[i] / nd - mean[i]), bound)
          << "ReduceSum / n, row " << r << " of " << n << " on " << d.str();
      EXPECT_LE(std::abs(gp[i] - mean[i]), bound) << "GlobalAveragePool, plane " << r << " of " << n << " on "
                                                  << d.str();
    }
  }
}

// LayerNormalization over rows of 2^16: y = (x - mean) / std. An error d in the mean moves
// every output by d / std; the bound is a few times eps * max|x| / std.
TEST_P(SummationAccuracy, LayerNormOfLongRows) {
  const Device d = GetParam();
  const int64_t rows = 4, n = int64_t{1} << 16;
  const std::vector<double> x = outlier_rows(rows, n);
  const std::vector<double> mean = row_means(x, rows, n);
  const std::vector<double> ones(static_cast<size_t>(n), 1.0), zeros(static_cast<size_t>(n), 0.0);
  const std::vector<double> y =
      host(call_op("LayerNormalization",
                   {Tensor::from_values(x, {rows, n}, DType::f32).to(d),
                    Tensor::from_values(ones, {n}, DType::f32).to(d),
                    Tensor::from_values(zeros, {n}, DType::f32).to(d)},
                   {{"axis", int64_t{-1}}, {"epsilon", 1e-5}}, 1)
               .at(0));
  for (int64_t r = 0; r < rows; ++r) {
    double var = 0.0;
    const double m = mean[static_cast<size_t>(r)];
    for (int64_t i = 0; i < n; ++i) var += std::pow(x[static_cast<size_t>(r * n + i)] - m, 2);
    const double inv_std = 1.0 / std::sqrt(var / static_cast<double>(n) + 1e-5);
    double worst = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(r * n + i);
      worst = std::max(worst, std::abs(y[k] - (x[k] - m) * inv_std));
    }
    EXPECT_LE(worst, 8 * kEps * kOutlier * inv_std) << "row " << r << " on " << d.str();
  }
}

// SqueezeExcite with identity products and no activations: each channel's gate is 0.5 plus its
// mean, read back at the outlier (y = x * gate, x = kOutlier there).
TEST_P(SummationAccuracy, SqueezeExciteMeansOfLargeMaps) {
  const Device d = GetParam();
  const int64_t C = 6;
  for (int64_t n : {int64_t{1001}, int64_t{8192}, int64_t{8195}}) {
    const std::vector<double> x = outlier_rows(C, n);
    const std::vector<double> mean = row_means(x, C, n);
    std::vector<double> eye(static_cast<size_t>(C * C), 0.0);
    for (int64_t c = 0; c < C; ++c) eye[static_cast<size_t>(c * C + c)] = 1.0;
    const std::vector<double> zeros(static_cast<size_t>(C), 0.0), halves(static_cast<size_t>(C), 0.5);
    const std::vector<double> y =
        host(call_op("SqueezeExcite",
                     {Tensor::from_values(x, {1, C, n}, DType::f32).to(d),
                      Tensor::from_values(eye, {C, C, 1}, DType::f32).to(d),
                      Tensor::from_values(zeros, {C}, DType::f32).to(d),
                      Tensor::from_values(eye, {C, C, 1}, DType::f32).to(d),
                      Tensor::from_values(halves, {C}, DType::f32).to(d)},
                     {{"activation", std::string()}, {"gate", std::string()}})
                 .at(0));
    for (int64_t c = 0; c < C; ++c) {
      const double gate = y[static_cast<size_t>(c * n)] / kOutlier;
      EXPECT_LE(std::abs(gate - (0.5 + mean[static_cast<size_t>(c)])), 4 * kEps * kOutlier)
          << "channel " << c << " of " << n << " positions on " << d.str();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, SummationAccuracy, ::testing::ValuesIn(test_devices()),
                         [](const ::testing::TestParamInfo<Device>& i) {
                           std::string s = i.param.str();
                           std::replace(s.begin(), s.end(), ':', '_');
                           return s;
                         });

}  // namespace
}  // namespace porta
