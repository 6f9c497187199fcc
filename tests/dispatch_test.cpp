// Dispatcher, eager API and errors that name what is wrong.
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

TEST(Dispatch, ExplainSaysNativeOnCpu) {
  std::string e = explain("MatMul", Device::cpu(), DType::f32);
  EXPECT_NE(e.find("native"), std::string::npos) << e;
}

TEST(Dispatch, UnknownOpIsUnsupported) {
  EXPECT_THROW(call_op("NoSuchOp", {Tensor::scalar(1, DType::f32)}), Unsupported);
}

TEST(Dispatch, MissingDtypeNamesBackendsThatHaveTheOp) {
  // Erf has no integer kernel anywhere: the message lists where the op does exist.
  try {
    call_op("Erf", {Tensor::from_values({1, 2}, {2}, DType::i64)});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("Erf"), std::string::npos) << m;
    EXPECT_NE(m.find("i64"), std::string::npos) << m;
  }
}

TEST(Dispatch, ResolutionIsCached) {
  const OpSchema* op = find_op("Add");
  ASSERT_NE(op, nullptr);
  const Resolution& a = resolve(*op, Device::cpu(), DType::f32);
  const Resolution& b = resolve(*op, Device::cpu(), DType::f32);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(a.path, Path::native);
}

TEST(Dispatch, EagerMatmulMatchesReference) {
  Tensor a = Tensor::from_values({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f32);
  Tensor b = Tensor::from_values({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f32);
  Tensor c = ops::matmul(a, b);
  EXPECT_EQ(c.to_doubles(), (std::vector<double>{4, 5, 10, 11}));
}

TEST(Dispatch, MatmulShapeErrorNamesBothShapes) {
  Tensor a = Tensor::zeros({4, 3}, DType::f32), b = Tensor::zeros({5, 2}, DType::f32);
  try {
    ops::matmul(a, b);
    FAIL();
  } catch (const ShapeError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("4x3"), std::string::npos) << m;
    EXPECT_NE(m.find("5x2"), std::string::npos) << m;
  }
}

TEST(Dispatch, DeviceParsing) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("vulkan:1").index, 1);
  EXPECT_EQ(Device::parse("cuda").type, DeviceType::cuda);
  EXPECT_THROW(Device::parse("tpu"), InvalidArgument);
  EXPECT_THROW(Device::parse("cuda:x"), InvalidArgument);
  EXPECT_THROW(Device::parse("cpu:1"), InvalidArgument);
  Device a = Device::parse("auto");
  EXPECT_TRUE(find_backend(a.type)->availability(a.index).available);
}

TEST(Dispatch, UnbuiltOrMissingDeviceIsBackendUnavailable) {
  EXPECT_THROW(Tensor::zeros({2}, DType::f32, Device{DeviceType::cpu, 0}).to(Device{DeviceType::vulkan, 99}),
               BackendUnavailable);
}

TEST(Dispatch, MixedDevicesAreDeviceMismatch) {
  // Needs a second usable device.
  for (Device d : all_devices()) {
    if (d.type == DeviceType::cpu || !device_unusable(d).empty()) continue;
    Tensor a = Tensor::zeros({2}, DType::f32), b = Tensor::zeros({2}, DType::f32, d);
    try {
      ops::add(a, b);
      FAIL();
    } catch (const DeviceMismatch& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("input 0 is on cpu"), std::string::npos) << m;
      EXPECT_NE(m.find(d.str()), std::string::npos) << m;
    }
    return;
  }
  GTEST_SKIP() << "only the cpu device is usable here";
}

TEST(Tensor, ViewsAndCopies) {
  Tensor a = Tensor::from_values({0, 1, 2, 3, 4, 5}, {2, 3}, DType::f32);
  Tensor t = a.transpose(0, 1);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.contiguous().to_doubles(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(a.slice(1, 1, 3).to_doubles(), (std::vector<double>{1, 2, 4, 5}));
  EXPECT_EQ(a.reshape({3, 2}).shape(), (Shape{3, 2}));
  EXPECT_THROW(a.reshape({4, 2}), ShapeError);
  EXPECT_EQ(Tensor::scalar(2, DType::f32).expand({2, 2}).to_doubles(), (std::vector<double>{2, 2, 2, 2}));
  Tensor h = a.cast(DType::f16);
  EXPECT_EQ(h.to_doubles(), a.to_doubles());
  EXPECT_THROW(Tensor::zeros({-1}, DType::f32), ShapeError);
  EXPECT_THROW(Tensor::zeros({int64_t{1} << 62, 1 << 8}, DType::f32), ShapeError);
}

TEST(Tensor, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(f16_to_f32(f32_to_f16(1.0f)), 1.0f);
  EXPECT_EQ(f16_to_f32(f32_to_f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
  EXPECT_EQ(f16_to_f32(f32_to_f16(5.96046448e-08f)), 5.96046448e-08f);  // smallest subnormal
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(1.0f)), 1.0f);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(NAN))));
}

}  // namespace
}  // namespace porta::test
