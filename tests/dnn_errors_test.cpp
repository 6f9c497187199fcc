// Bad input to the oneDNN-backed ops: each error is a ShapeError (or the documented kind)
// whose message names what was expected and what was got.
#include <gtest/gtest.h>

#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

Tensor zeros(Shape s) { return Tensor::zeros(s, DType::f32); }

TEST(DnnErrors, MatMulInnerDimensionMismatchNamesBothShapes) {
  std::string m = error_message<ShapeError>([] { call_op("MatMul", {zeros({4, 3}), zeros({5, 2})}); });
  EXPECT_NE(m.find("[MatMul]"), std::string::npos) << m;
  EXPECT_NE(m.find("4x3"), std::string::npos) << m;
  EXPECT_NE(m.find("5x2"), std::string::npos) << m;
}

TEST(DnnErrors, MatMulBatchMismatch) {
  std::string m = error_message<ShapeError>([] { call_op("MatMul", {zeros({2, 4, 3}), zeros({5, 3, 2})}); });
  EXPECT_NE(m.find("a is 2x4x3, b is 5x3x2"), std::string::npos) << m;
}

TEST(DnnErrors, GemmInnerDimensionMismatch) {
  std::string m = error_message<ShapeError>([] { call_op("Gemm", {zeros({4, 3}), zeros({4, 2})}); });
  EXPECT_NE(m.find("[Gemm] inner dimensions differ"), std::string::npos) << m;
}

TEST(DnnErrors, ConvChannelMismatch) {
  std::string m = error_message<ShapeError>([] { call_op("Conv", {zeros({1, 4, 32, 32}), zeros({8, 3, 3, 3})}); });
  EXPECT_NE(m.find("[Conv] weight has 3 input channels, input has 4 (X 1x4x32x32"), std::string::npos) << m;
}

TEST(DnnErrors, ConvBadKernelShapeLength) {
  std::string m = error_message<ShapeError>([] {
    call_op("Conv", {zeros({1, 3, 8, 8}), zeros({2, 3, 3, 3})}, {{"kernel_shape", std::vector<int64_t>{3}}});
  });
  EXPECT_NE(m.find("kernel_shape has 1 values, expected 2"), std::string::npos) << m;
}

TEST(DnnErrors, ConvBadPadsLength) {
  std::string m = error_message<ShapeError>([] {
    call_op("Conv", {zeros({1, 3, 8, 8}), zeros({2, 3, 3, 3})}, {{"pads", std::vector<int64_t>{1, 1, 1}}});
  });
  EXPECT_NE(m.find("pads has 3 values, expected 4"), std::string::npos) << m;
}

TEST(DnnErrors, ConvBadStridesLength) {
  std::string m = error_message<ShapeError>([] {
    call_op("Conv", {zeros({1, 3, 8, 8}), zeros({2, 3, 3, 3})}, {{"strides", std::vector<int64_t>{1, 1, 1}}});
  });
  EXPECT_NE(m.find("strides has 3 values, expected 2"), std::string::npos) << m;
}

TEST(DnnErrors, PoolBadKernelShapeLength) {
  std::string m = error_message<ShapeError>([] {
    call_op("MaxPool", {zeros({1, 3, 8, 8})}, {{"kernel_shape", std::vector<int64_t>{2, 2, 2}}});
  });
  EXPECT_NE(m.find("[MaxPool] kernel_shape has 3 values, expected 2"), std::string::npos) << m;
}

TEST(DnnErrors, PoolBadPadsLength) {
  std::string m = error_message<ShapeError>([] {
    call_op("AveragePool", {zeros({1, 3, 8, 8})},
            {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{1, 1}}});
  });
  EXPECT_NE(m.find("[AveragePool] pads has 2 values, expected 4"), std::string::npos) << m;
}

TEST(DnnErrors, PoolWindowLargerThanInput) {
  std::string m = error_message<ShapeError>([] {
    call_op("MaxPool", {zeros({1, 1, 2, 2})}, {{"kernel_shape", std::vector<int64_t>{3, 3}}});
  });
  EXPECT_NE(m.find("larger than"), std::string::npos) << m;
}

TEST(DnnErrors, BatchNormTrainingModeIsUnsupported) {
  Tensor c = zeros({3});
  EXPECT_THROW(call_op("BatchNormalization", {zeros({2, 3, 4}), c, c, c, c}, {{"training_mode", int64_t{1}}}, 1),
               Unsupported);
}

TEST(DnnErrors, BatchNormRunningStatsOnlyInTraining) {
  Tensor c = zeros({3});
  EXPECT_THROW(call_op("BatchNormalization", {zeros({2, 3, 4}), c, c, c, c}, {}, 3), Unsupported);
}

TEST(DnnErrors, BatchNormChannelMismatch) {
  Tensor c = zeros({4});
  std::string m = error_message<ShapeError>([&] { call_op("BatchNormalization", {zeros({2, 3, 4}), c, c, c, c}, {}, 1); });
  EXPECT_NE(m.find("scale must have shape 3"), std::string::npos) << m;
}

TEST(DnnErrors, SoftmaxAxisOutOfRange) {
  std::string m = error_message<ShapeError>([] { call_op("Softmax", {zeros({2, 3})}, {{"axis", int64_t{2}}}); });
  EXPECT_NE(m.find("axis 2 is out of range for rank 2"), std::string::npos) << m;
}

}  // namespace
}  // namespace porta::test
