// Transpose on cpu takes oneDNN's reorder for large contiguous f32 inputs and the tiled copy
// otherwise. Inputs that are views (permuted, or expanded with zero strides) must give the
// same result as their contiguous copies, on both sides of the size threshold.
#include <gtest/gtest.h>

#include <vector>

#include "porta/dispatch.hpp"

namespace {

using porta::Attributes;
using porta::DType;
using porta::Tensor;

std::vector<double> transpose(const Tensor& x, std::vector<int64_t> perm) {
  Attributes a{{"perm", perm}};
  return porta::call_op("Transpose", {x}, a).at(0).to_doubles();
}

TEST(TransposeCpu, ViewsMatchTheirContiguousCopies) {
  for (int64_t n : {40, 300}) {  // 1600 and 90000 elements: below and above the reorder's threshold
    std::vector<double> v(static_cast<size_t>(n * n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 977) - 300.0;
    Tensor base = Tensor::from_values(v, {n, n}, DType::f32);
    Tensor permuted = base.permute({1, 0});  // strides (1, n): not contiguous
    ASSERT_FALSE(permuted.is_contiguous());
    EXPECT_EQ(transpose(permuted, {1, 0}), transpose(permuted.contiguous(), {1, 0})) << "n " << n;
    Tensor row = Tensor::from_values(std::vector<double>(v.begin(), v.begin() + n), {1, n}, DType::f32);
    Tensor expanded = row.expand({n, n});  // stride 0 along the rows
    EXPECT_EQ(transpose(expanded, {1, 0}), transpose(expanded.contiguous(), {1, 0})) << "n " << n;
  }
}

}  // namespace
