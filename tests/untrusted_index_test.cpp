// Index values in untrusted inputs (docs/RELIABILITY.md, "Untrusted model files"): Gather
// indices outside the axis, Slice starts/ends/steps/axes, Split sizes that do not add up. Each
// is an error naming the op and the value, or (for Slice bounds, as ONNX specifies) clamped;
// never a read outside a buffer. Checked on cpu and, where built, vulkan:0.
#include <cstdint>
#include <limits>

#include "tests/test_util.hpp"

namespace porta::test {
namespace {

std::vector<Device> devices() {
  std::vector<Device> out{Device::cpu()};
  if (find_backend(DeviceType::vulkan) && device_unusable(Device::parse("vulkan:0")).empty())
    out.push_back(Device::parse("vulkan:0"));
  return out;
}

Tensor values(std::vector<double> v, Shape shape, DType dtype, Device d) {
  return Tensor::from_values(v, shape, dtype).to(d);
}

TEST(UntrustedIndex, GatherIndicesOutsideTheAxisAreErrors) {
  for (Device d : devices()) {
    SCOPED_TRACE(d.str());
    Tensor data = values({1, 2, 3}, {3}, DType::f32, d);
    for (double bad : {3.0, 7.0, -4.0, 1e12}) {
      Tensor idx = values({0, bad}, {2}, DType::i64, d);
      std::string msg = error_message<ShapeError>([&] { call_op("Gather", {data, idx}).at(0).to(Device::cpu()); });
      EXPECT_NE(msg.find("Gather"), std::string::npos) << msg;
    }
    // In range, negative counts from the end.
    Tensor idx = values({-1, 0}, {2}, DType::i64, d);
    EXPECT_EQ(call_op("Gather", {data, idx}).at(0).to(Device::cpu()).to_doubles(), (std::vector<double>{3, 1}));
  }
}

TEST(UntrustedIndex, SliceBoundsAreClampedAsOnnxSays) {
  const double big = 9.2e18;  // beyond any axis, near INT64_MAX
  for (Device d : devices()) {
    SCOPED_TRACE(d.str());
    Tensor data = values({1, 2, 3, 4}, {4}, DType::f32, d);
    auto slice = [&](double start, double end, double step) {
      return call_op("Slice", {data, values({start}, {1}, DType::i64, d), values({end}, {1}, DType::i64, d),
                               values({0}, {1}, DType::i64, d), values({step}, {1}, DType::i64, d)})
          .at(0)
          .to(Device::cpu())
          .to_doubles();
    };
    EXPECT_EQ(slice(-big, big, 1), (std::vector<double>{1, 2, 3, 4}));
    EXPECT_EQ(slice(big, -big, -1), (std::vector<double>{4, 3, 2, 1}));
    EXPECT_EQ(slice(10, 20, 1), (std::vector<double>{}));
  }
}

TEST(UntrustedIndex, SliceStepZeroAndAxisOutOfRangeAreErrors) {
  for (Device d : devices()) {
    SCOPED_TRACE(d.str());
    Tensor data = values({1, 2, 3, 4}, {4}, DType::f32, d);
    Tensor zero = values({0}, {1}, DType::i64, d), two = values({2}, {1}, DType::i64, d);
    auto run = [&](const Tensor& axes, const Tensor& steps) {
      call_op("Slice", {data, zero, two, axes, steps}).at(0).to(Device::cpu());
    };
    EXPECT_THROW(run(zero, zero), Error);                                    // step 0
    EXPECT_THROW(run(values({1}, {1}, DType::i64, d), values({1}, {1}, DType::i64, d)), Error);   // axis 1 of rank 1
    EXPECT_THROW(run(values({-2}, {1}, DType::i64, d), values({1}, {1}, DType::i64, d)), Error);  // axis -2
  }
}

TEST(UntrustedIndex, SplitSizesMustAddUpToTheAxis) {
  for (Device d : devices()) {
    SCOPED_TRACE(d.str());
    Tensor data = values({1, 2, 3, 4}, {4}, DType::f32, d);
    for (std::vector<double> sizes : {std::vector<double>{1, 2}, {3, 3}, {5, -1}}) {
      Tensor split = values(sizes, {2}, DType::i64, d);
      EXPECT_THROW(call_op("Split", {data, split}, {}, 2), Error) << sizes[0] << "," << sizes[1];
    }
    std::vector<Tensor> parts = call_op("Split", {data, values({1, 3}, {2}, DType::i64, d)}, {}, 2);
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[1].to(Device::cpu()).to_doubles(), (std::vector<double>{2, 3, 4}));
  }
}

}  // namespace
}  // namespace porta::test
