// TopK, CumSum and Trilu on vulkan beyond what the conformance cases show: they run natively
// (no CPU fallback) and stay right under the driver's loop cap (vk_kernel.hpp's loop_limit,
// forced small with vk::set_loop_limit_override): CumSum splits a line over several dispatches,
// TopK declines rows whose rank count does not fit, with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

Tensor random_input(const Shape& shape, DType dtype = DType::f32, double lo = -2, double hi = 2) {
  InputSpec s;
  s.shape = shape;
  s.lo = lo;
  s.hi = hi;
  return make_input(s, dtype);
}

Tensor i64_values(std::vector<double> v, Shape shape) { return Tensor::from_values(v, shape, DType::i64); }

// Runs natively on vulkan:0 and matches the float64 reference in every output.
void expect_native_and_right(const char* name, const std::vector<Tensor>& host, const Attributes& attrs,
                             int outputs = 1) {
  SCOPED_TRACE(testing::Message() << name << " " << shape_str(host[0].shape()) << " " << dtype_name(host[0].dtype()));
  std::vector<Tensor> dev = to_vk(host);
  Resolution r = resolve_vk(name, dev, attrs, host[0].dtype());
  EXPECT_EQ(r.path, Path::native) << r.reason;
  std::vector<Tensor> ref = reference_op(name, host, attrs, outputs);
  std::vector<Tensor> got = call_op(name, dev, attrs, outputs);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Comparison cmp = compare(got[i], ref[i], default_tolerance(got[i].dtype()));
    EXPECT_TRUE(cmp.ok) << "output " << i << ": " << cmp.message;
  }
}

TEST(VulkanTopKCumSumTrilu, RunNatively) {
  REQUIRE_VULKAN();
  expect_native_and_right("TopK", {random_input({5, 33}), i64_values({4}, {1})}, {}, 2);
  expect_native_and_right("TopK", {random_input({5, 33, 3}, DType::i32), i64_values({33}, {1})},
                          {{"axis", int64_t{1}}, {"largest", int64_t{0}}}, 2);
  expect_native_and_right("CumSum", {random_input({5, 33}), i64_values({-1}, {})}, {});
  expect_native_and_right("Trilu", {random_input({2, 6, 7}, DType::f16), i64_values({-1}, {})}, {});
}

// NaN is the largest value: first with largest = 1, last with largest = 0; ties by index.
TEST(VulkanTopKCumSumTrilu, TopKNaNAndTies) {
  REQUIRE_VULKAN();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::from_values({2, nan, 5, 2, nan, -1}, {6}, DType::f32);
  for (int64_t largest : {1, 0}) {
    std::vector<Tensor> got = call_op("TopK", {x.to(kVk), i64_values({6}, {1}).to(kVk)}, {{"largest", largest}}, 2);
    std::vector<double> v = got[0].to(Device::cpu()).to_doubles(), i = got[1].to(Device::cpu()).to_doubles();
    std::vector<double> want_i =
        largest ? std::vector<double>{1, 4, 2, 0, 3, 5} : std::vector<double>{5, 0, 3, 2, 1, 4};
    EXPECT_EQ(i, want_i) << "largest " << largest;
    for (size_t j = 0; j < v.size(); ++j) {
      double want = x.to_doubles()[static_cast<size_t>(want_i[j])];
      EXPECT_TRUE(std::isnan(want) ? std::isnan(v[j]) : v[j] == want) << "largest " << largest << " at " << j;
    }
  }
}

// TopK: a row of n costs n + 1 loop iterations per invocation; longer rows decline.
TEST(VulkanTopKCumSumTrilu, TopKDeclinesRowsPastTheLoopCap) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(20);
  std::vector<Tensor> fits = {random_input({7, 19}), i64_values({3}, {1})};
  expect_native_and_right("TopK", fits, {}, 2);
  std::vector<Tensor> longer = to_vk({random_input({7, 20}), i64_values({3}, {1})});
  Resolution r = resolve_vk("TopK", longer, {}, DType::f32);
  EXPECT_NE(r.path, Path::native);
  EXPECT_NE(r.reason.find("loop iterations"), std::string::npos) << r.reason;
  // Declined calls still give the right answer (on the CPU).
  std::vector<Tensor> host = {random_input({7, 20}), i64_values({3}, {1})};
  std::vector<Tensor> ref = reference_op("TopK", host, {}, 2);
  std::vector<Tensor> got = call_op("TopK", to_vk(host), {}, 2);
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(compare(got[i], ref[i], 2e-5).ok) << "output " << i;
}

// CumSum: lines longer than the cap allows run over several dispatches, the running sums
// carried between them, for every attribute combination and dtype.
TEST(VulkanTopKCumSumTrilu, CumSumSplitsLinesUnderTheLoopCap) {
  REQUIRE_VULKAN();
  const auto& caps = vk::context(0).caps();
  for (uint64_t c : {2, 3, 8}) {
    LoopCapOverride cap(c);
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1}) {
        Attributes attrs{{"exclusive", exclusive}, {"reverse", reverse}};
        expect_native_and_right("CumSum", {random_input({3, 41}), i64_values({1}, {})}, attrs);
        expect_native_and_right("CumSum", {random_input({4, 23, 5}, DType::i32), i64_values({-2}, {1})}, attrs);
        if (caps.int64_arithmetic)
          expect_native_and_right("CumSum", {random_input({2, 30}, DType::i64), i64_values({1}, {})}, attrs);
        if (caps.fp16_storage)
          expect_native_and_right("CumSum", {random_input({17, 3}, DType::f16), i64_values({0}, {})}, attrs);
      }
  }
}

// Under the device's own cap: a line of 200000 elements (several dispatches on lavapipe).
TEST(VulkanTopKCumSumTrilu, CumSumLongLineAtTheRealCap) {
  REQUIRE_VULKAN();
  expect_native_and_right("CumSum", {random_input({200000}, DType::i32), i64_values({0}, {})},
                          {{"reverse", int64_t{1}}});
  expect_native_and_right("CumSum", {random_input({200000}, DType::f32, -1, 1), i64_values({0}, {})}, {});
}

}  // namespace
}  // namespace porta::test
