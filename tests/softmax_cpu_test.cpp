// Softmax / LogSoftmax on cpu take three paths: porta's row loop (f32, last axis), oneDNN
// (f32 on another axis, bf16) and a scalar loop (f64). Rows with -inf, +inf and NaN must come
// out the same on all of them and as PyTorch gives them (exp(x - max) / sum: a row whose max
// is +-inf or that holds a NaN is all NaN; -inf elements of an otherwise finite row are 0), and
// long rows (past the loop's row buffer) must match short ones.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "porta/ops.hpp"

namespace {

using porta::DType;
using porta::Tensor;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> values(const Tensor& t) {
  Tensor d = porta::call_op("Cast", {t}, {{"to", int64_t{11}}}).at(0);  // ONNX DOUBLE
  std::vector<double> v(static_cast<size_t>(d.numel()));
  d.copy_to_host(v.data(), v.size() * sizeof(double));
  return v;
}

// Softmax (or LogSoftmax) of rows x len, computed along axis 1 of [rows, len] and along axis 0
// of the transposed [len, rows], returned in [rows, len] order.
std::vector<double> run(const char* op, const std::vector<double>& x, int64_t rows, int64_t len, DType dt,
                        bool transposed) {
  if (!transposed) {
    Tensor t = Tensor::from_values(x, {rows, len}, dt);
    return values(porta::ops::unary(op, t, {{"axis", int64_t{-1}}}));
  }
  std::vector<double> xt(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < len; ++c) xt[c * rows + r] = x[r * len + c];
  Tensor t = Tensor::from_values(xt, {len, rows}, dt);
  std::vector<double> yt = values(porta::ops::unary(op, t, {{"axis", int64_t{0}}})), y(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < len; ++c) y[r * len + c] = yt[c * rows + r];
  return y;
}

// float64 reference of one row, PyTorch's formulas.
std::vector<double> reference(const char* op, const double* x, int64_t len) {
  double mx = -kInf;
  bool nan = false;
  for (int64_t i = 0; i < len; ++i) {
    if (std::isnan(x[i])) nan = true;
    else mx = std::max(mx, x[i]);
  }
  double sum = 0;
  for (int64_t i = 0; i < len; ++i) sum += std::exp(x[i] - mx);
  std::vector<double> y(static_cast<size_t>(len));
  for (int64_t i = 0; i < len; ++i)
    y[i] = nan ? kNaN : std::string(op) == "Softmax" ? std::exp(x[i] - mx) / sum : (x[i] - mx) - std::log(sum);
  return y;
}

// Tolerance (absolute, relative above 1): porta's f32 row loop 2e-6; oneDNN's f32 softmax on
// another axis 1e-4 (its sums drift on long rows: 6.5e-5 seen at 40000); the f64 loop 1e-12.
void expect_rows(const char* op, const std::vector<double>& x, int64_t rows, int64_t len) {
  for (DType dt : {DType::f32, DType::f64})
    for (bool transposed : {false, true}) {
      double tol = dt == DType::f64 ? 1e-12 : transposed ? 1e-4 : 2e-6;
      std::vector<double> y = run(op, x, rows, len, dt, transposed);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<double> want = reference(op, x.data() + r * len, len);
        for (int64_t c = 0; c < len; ++c) {
          double got = y[r * len + c], w = want[c];
          SCOPED_TRACE(testing::Message() << op << " " << porta::dtype_name(dt) << (transposed ? " axis 0" : " last axis")
                                          << " row " << r << " col " << c);
          if (std::isnan(w)) EXPECT_TRUE(std::isnan(got)) << got;
          else if (std::isinf(w)) EXPECT_EQ(got, w);
          else EXPECT_NEAR(got, w, tol * std::max(1.0, std::fabs(w)));
        }
      }
    }
}

TEST(SoftmaxCpu, SpecialValuesAgreeOnEveryPath) {
  const int64_t len = 5;
  std::vector<double> x = {
      -kInf, -kInf, -kInf, -kInf, -kInf,  // no visible element: NaN
      kNaN,  1,     2,     3,     4,      // a NaN: the row is NaN
      kInf,  1,     2,     3,     4,      // +inf - +inf: NaN
      -kInf, 1,     2,     -kInf, 4,      // -inf elements: probability 0, log -inf
      1e4,   1e4 - 1, 1e4 - 3, -1e4, 0,   // large values: shifted by the max
      0.5,   0.5,   0.5,   0.5,   0.5,    // uniform
  };
  int64_t rows = static_cast<int64_t>(x.size()) / len;
  expect_rows("Softmax", x, rows, len);
  expect_rows("LogSoftmax", x, rows, len);
}

TEST(SoftmaxCpu, LongAndOddRowsMatchTheReference) {
  std::mt19937 rng(7);
  std::normal_distribution<double> d(0.0, 4.0);
  // 40000 is past the row loop's 16384-float buffer (Softmax then works in the output).
  for (int64_t len : {1, 15, 33, 4097, 40000}) {
    int64_t rows = len > 1000 ? 3 : 7;
    std::vector<double> x(static_cast<size_t>(rows * len));
    for (double& v : x) v = static_cast<float>(d(rng));
    SCOPED_TRACE(testing::Message() << "len " << len);
    expect_rows("Softmax", x, rows, len);
    expect_rows("LogSoftmax", x, rows, len);
  }
}

}  // namespace
