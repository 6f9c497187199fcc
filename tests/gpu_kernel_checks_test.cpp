// The cuda and hip kernels that validate data on the device (Gather's indices, LSTM/GRU
// sequence_lens) report a bad value through a deferred check: no host wait at the call, the
// op's own error (op, valid range, value) at the next wait for the device. Skipped, with the
// runtime's reason, where no device is present.
#include <gtest/gtest.h>

#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

class GpuKernelChecks : public ::testing::TestWithParam<DeviceType> {};

#define PORTA_DEVICE_OR_SKIP(d)                                                            \
  Device d{GetParam(), 0};                                                                 \
  if (!find_backend(GetParam()))                                                           \
    GTEST_SKIP() << device_type_name(GetParam()) << " backend not built in this configuration"; \
  if (std::string why_ = device_unusable(d); !why_.empty()) GTEST_SKIP() << d.str() << " unavailable: " << why_

TEST_P(GpuKernelChecks, GatherBadIndexIsTheCpuErrorAtTheNextWait) {
  PORTA_DEVICE_OR_SKIP(d);
  Tensor data = Tensor::from_values({0, 1, 2, 3, 4, 5}, {3, 2}, DType::f32).to(d);
  Tensor bad = Tensor::from_values({0, 5}, {2}, DType::i64).to(d);
  std::string m = error_message<ShapeError>([&] {
    Tensor y = call_op("Gather", {data, bad}).at(0);
    (void)y.to(Device::cpu());  // the wait that raises it
  });
  for (const char* part : {"[Gather]", "expected indices in [-3, 3)", "axis 0", "3x2", "got 5"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
  // The record is cleared: the device keeps working and a good call gives its values.
  Tensor good = Tensor::from_values({-1, 0}, {2}, DType::i64).to(d);
  Tensor y = call_op("Gather", {data, good}).at(0);
  EXPECT_EQ(y.to_doubles(), (std::vector<double>{4, 5, 0, 1}));
}

TEST_P(GpuKernelChecks, GatherOnEmptyOutputStillChecksIndices) {
  PORTA_DEVICE_OR_SKIP(d);
  Tensor data = Tensor::from_values({}, {3, 0}, DType::f32).to(d);
  Tensor bad = Tensor::from_values({-4}, {1}, DType::i32).to(d);
  std::string m = error_message<ShapeError>([&] {
    (void)call_op("Gather", {data, bad}).at(0);
    find_backend(GetParam())->synchronize(0);
  });
  EXPECT_NE(m.find("got -4"), std::string::npos) << m;
}

TEST_P(GpuKernelChecks, LstmSequenceLengthOutOfRange) {
  PORTA_DEVICE_OR_SKIP(d);
  const int64_t S = 3, N = 2, I = 2, H = 2;
  Tensor x = Tensor::from_values(std::vector<double>(S * N * I, 0.5), {S, N, I}, DType::f32).to(d);
  Tensor w = Tensor::from_values(std::vector<double>(4 * H * I, 0.1), {1, 4 * H, I}, DType::f32).to(d);
  Tensor r = Tensor::from_values(std::vector<double>(4 * H * H, 0.1), {1, 4 * H, H}, DType::f32).to(d);
  Tensor lens = Tensor::from_values({3, 9}, {N}, DType::i32).to(d);
  std::string m = error_message<ShapeError>([&] {
    std::vector<Tensor> y = call_op("LSTM", {x, w, r, Tensor(), lens}, {}, 3);
    (void)y.at(1).to(Device::cpu());
  });
  for (const char* part : {"[LSTM]", "sequence_lens in [0, 3]", "got 9"})
    EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
}

// Needs no device (a suite of its own, so it runs here while the device tests skip): every op
// the cpu runs has its own kernel on this backend for at least the cpu kernel's dtypes, so the
// conformance suite on a GPU exercises native kernels, not the cpu fallback. Constant is the
// exception: it has no inputs (sessions fold it; an eager call runs where its inputs are).
class GpuKernelCoverage : public ::testing::TestWithParam<DeviceType> {};

TEST_P(GpuKernelCoverage, EveryOpOfTheCpuHasANativeKernel) {
  if (!find_backend(GetParam()))
    GTEST_SKIP() << device_type_name(GetParam()) << " backend not built in this configuration";
  for (const OpSchema* op : all_ops()) {
    if (op->name == "Constant") continue;
    DTypeSet cpu = 0, gpu = 0;
    for (const KernelDef* k : kernels_for(*op)) {
      if (k->source != "builtin") continue;  // plugins and test-only kernels
      if (k->backend == DeviceType::cpu) cpu |= k->dtypes;
      if (k->backend == GetParam()) gpu |= k->dtypes;
    }
    if (cpu == 0) continue;
    EXPECT_EQ(cpu & ~gpu, 0u) << op->name << ": the cpu takes " << dtype_set_names(cpu) << ", "
                              << device_type_name(GetParam()) << " only " << (gpu ? dtype_set_names(gpu) : "nothing");
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuKernelChecks, ::testing::ValuesIn(gpu_device_types()),
                         [](const auto& info) { return std::string(device_type_name(info.param)); });
INSTANTIATE_TEST_SUITE_P(Backends, GpuKernelCoverage, ::testing::ValuesIn(gpu_device_types()),
                         [](const auto& info) { return std::string(device_type_name(info.param)); });

}  // namespace
}  // namespace porta::test
