// TopK, CumSum and Trilu: errors name what was expected and what was got; K = 0 and the
// shapes of the outputs; exact answers the random conformance cases do not pin down (ties,
// NaN, integer wrap-around of CumSum), on every built device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

Tensor i64s(std::vector<int64_t> v, Shape shape) { return Tensor::from_host(v.data(), shape, DType::i64); }
Tensor iota(const Shape& shape, DType dtype = DType::f32) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::from_values(v, shape, dtype);
}
void expect_mentions(const std::string& msg, std::initializer_list<const char*> parts) {
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(TopKCumSumTrilu, Errors) {
  std::string m = error_message<ShapeError>([] { call_op("TopK", {iota({3, 4}), i64s({5}, {1})}, {}, 2); });
  expect_mentions(m, {"[TopK]", "expected K <= 4", "axis 1", "3x4", "got 5"});
  m = error_message<ShapeError>([] { call_op("TopK", {iota({3, 4}), i64s({-1}, {1})}, {}, 2); });
  expect_mentions(m, {"[TopK]", "K >= 0", "got -1"});
  m = error_message<ShapeError>([] { call_op("TopK", {iota({3, 4}), i64s({1, 2}, {2})}, {}, 2); });
  expect_mentions(m, {"[TopK]", "one element", "got shape"});
  m = error_message<ShapeError>([] { call_op("CumSum", {iota({3, 4}), i64s({2}, {})}); });
  expect_mentions(m, {"[CumSum]", "expected axis in [-2, 2)", "got 2"});
  m = error_message<ShapeError>([] { call_op("Trilu", {iota({4}), Tensor()}); });
  expect_mentions(m, {"[Trilu]", "rank >= 2", "got shape"});
  m = error_message<ShapeError>([] { call_op("Trilu", {iota({3, 4}), i64s({1, 2}, {2})}); });
  expect_mentions(m, {"[Trilu]", "0-D or 1-element", "got shape"});
}

TEST(TopKCumSumTrilu, ExactOnEveryDevice) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    // K = 0: empty outputs of the right shapes and dtypes.
    std::vector<Tensor> e = call_op("TopK", {iota({3, 4}).to(d), i64s({0}, {1}).to(d)}, {{"axis", int64_t{0}}}, 2);
    EXPECT_EQ(e[0].shape(), (Shape{0, 4}));
    EXPECT_EQ(e[1].shape(), (Shape{0, 4}));
    EXPECT_EQ(e[1].dtype(), DType::i64);
    // NaN largest; ties keep the lower index first.
    Tensor x = Tensor::from_values({3, nan, 1, 3, nan, 1}, {6}, DType::f32).to(d);
    std::vector<Tensor> t = call_op("TopK", {x, i64s({4}, {1}).to(d)}, {}, 2);
    EXPECT_EQ(t[1].to(Device::cpu()).to_doubles(), (std::vector<double>{1, 4, 0, 3}));
    t = call_op("TopK", {x, i64s({4}, {1}).to(d)}, {{"largest", int64_t{0}}}, 2);
    EXPECT_EQ(t[1].to(Device::cpu()).to_doubles(), (std::vector<double>{2, 5, 0, 3}));
    // i32 CumSum wraps around like int32 arithmetic.
    std::vector<int32_t> big = {2147483647, 1, 1};
    Tensor xi = Tensor::from_host(big.data(), {3}, DType::i32).to(d);
    std::vector<double> c = call_op("CumSum", {xi, i64s({0}, {}).to(d)})[0].to(Device::cpu()).to_doubles();
    EXPECT_EQ(c, (std::vector<double>{2147483647, -2147483648.0, -2147483647.0}));
    // Trilu with k far beyond the matrix: all kept (upper, k very negative) or none.
    Tensor m = iota({2, 3}).to(d);
    EXPECT_EQ(call_op("Trilu", {m, i64s({-(int64_t{1} << 40)}, {}).to(d)})[0].to(Device::cpu()).to_doubles(),
              (std::vector<double>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(call_op("Trilu", {m, i64s({int64_t{1} << 40}, {}).to(d)})[0].to(Device::cpu()).to_doubles(),
              (std::vector<double>(6, 0.0)));
  }
}

}  // namespace
}  // namespace porta::test
