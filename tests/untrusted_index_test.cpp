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

// GatherElements, GatherND, ScatterElements, ScatterND: an index outside [-n, n) of the data
// axis it addresses is a ShapeError naming the op, the axis, the bound and the value, on every
// device built (cpu, vulkan:0, cuda:0 / hip:0: there deferred, raised at the copy to host).
TEST(UntrustedIndex, GatherAndScatterFamilyIndicesOutsideTheAxisAreErrors) {
  std::vector<Device> all = devices();
  for (DeviceType t : {DeviceType::cuda, DeviceType::hip})
    if (find_backend(t) && device_unusable(Device{t, 0}).empty()) all.push_back(Device{t, 0});
  for (Device d : all) {
    SCOPED_TRACE(d.str());
    Tensor data = values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32, d);
    auto expect_error = [&](const std::string& op, std::vector<Tensor> in, Attributes a, const std::string& want) {
      std::string msg = error_message<ShapeError>([&] { call_op(op, in, a).at(0).to(Device::cpu()); });
      EXPECT_NE(msg.find("[" + op + "]"), std::string::npos) << msg;
      EXPECT_NE(msg.find(want), std::string::npos) << msg;
    };
    for (double bad : {3.0, -4.0, 1e12}) {
      std::string got = str(", got ", static_cast<int64_t>(bad));
      Tensor idx = values({0, bad, 1, 2}, {2, 2}, DType::i64, d);
      expect_error("GatherElements", {data, idx}, {{"axis", int64_t{1}}}, "[-3, 3) for axis 1 of data 2x3" + got);
      expect_error("ScatterElements", {data, idx, values({1, 1, 1, 1}, {2, 2}, DType::f32, d)},
                   {{"axis", int64_t{1}}, {"reduction", std::string("add")}}, "for axis 1 of data 2x3" + got);
      // Tuples (row, column): the bad value addresses axis 1.
      Tensor tuples = values({1, 0, 0, bad}, {2, 2}, DType::i64, d);
      expect_error("GatherND", {data, tuples}, {}, "[-3, 3) for axis 1 of data 2x3" + got);
      expect_error("ScatterND", {data, tuples, values({7, 8}, {2}, DType::f32, d)}, {}, "for axis 1 of data 2x3" + got);
    }
    Tensor rows = values({2}, {1, 1}, DType::i64, d);
    expect_error("ScatterND", {data, rows, values({7, 8, 9}, {1, 3}, DType::f32, d)},
                 {{"reduction", std::string("mul")}}, "[-2, 2) for axis 0 of data 2x3, got 2");
    // In range: negative indices count from the end.
    Tensor idx = values({-1, 0}, {1, 2}, DType::i64, d);
    EXPECT_EQ(call_op("GatherElements", {data, idx}, {{"axis", int64_t{1}}}).at(0).to(Device::cpu()).to_doubles(),
              (std::vector<double>{3, 1}));
    Tensor upd = values({10, 20, 30}, {1, 3}, DType::f32, d);
    EXPECT_EQ(call_op("ScatterND", {data, values({-1}, {1, 1}, DType::i64, d), upd}).at(0).to(Device::cpu()).to_doubles(),
              (std::vector<double>{1, 2, 3, 10, 20, 30}));
  }
}

// Duplicate indices: add accumulates every update; none lets the last one win (ONNX leaves
// it undefined; porta makes it deterministic on every backend).
TEST(UntrustedIndex, ScatterDuplicatesAccumulateOrLastWins) {
  std::vector<Device> all = devices();
  for (DeviceType t : {DeviceType::cuda, DeviceType::hip})
    if (find_backend(t) && device_unusable(Device{t, 0}).empty()) all.push_back(Device{t, 0});
  for (Device d : all) {
    SCOPED_TRACE(d.str());
    Tensor data = values({1, 2, 3}, {3}, DType::f32, d);
    Tensor idx = values({1, 1, -2, 0, 1}, {5, 1}, DType::i64, d);
    Tensor upd = values({10, 20, 30, 40, 50}, {5}, DType::f32, d);
    auto run = [&](const char* r) {
      return call_op("ScatterND", {data, idx, upd}, {{"reduction", std::string(r)}}).at(0).to(Device::cpu()).to_doubles();
    };
    EXPECT_EQ(run("add"), (std::vector<double>{41, 112, 3}));
    EXPECT_EQ(run("none"), (std::vector<double>{40, 50, 3}));
    EXPECT_EQ(run("max"), (std::vector<double>{40, 50, 3}));
    EXPECT_EQ(run("min"), (std::vector<double>{1, 2, 3}));
    Tensor eidx = values({2, 2, 0, 2}, {4}, DType::i64, d);
    Tensor eupd = values({5, 6, 7, 8}, {4}, DType::f32, d);
    EXPECT_EQ(call_op("ScatterElements", {data, eidx, eupd}).at(0).to(Device::cpu()).to_doubles(),
              (std::vector<double>{7, 2, 8}));
    EXPECT_EQ(call_op("ScatterElements", {data, eidx, eupd}, {{"reduction", std::string("mul")}})
                  .at(0).to(Device::cpu()).to_doubles(),
              (std::vector<double>{7, 2, 720}));
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
