// The cuda and hip backends: built, listed, and honest about why a device is unusable.
// Tests that need a device skip with the runtime's reason (never pass without running).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

class GpuBackend : public ::testing::TestWithParam<DeviceType> {};

// Declares `b`, the backend under test, or skips when this build does not include it.
#define PORTA_BACKEND_OR_SKIP(b)                                                     \
  Backend* b = find_backend(GetParam());                                             \
  if (!b) GTEST_SKIP() << device_type_name(GetParam()) << " backend not built in this configuration"

TEST_P(GpuBackend, ListedWithAvailabilityAndReason) {
  PORTA_BACKEND_OR_SKIP(b);
  EXPECT_EQ(b->type(), GetParam());
  ASSERT_GE(b->device_count(), 1);
  std::vector<Device> all = all_devices();
  Device first{GetParam(), 0};
  EXPECT_NE(std::find(all.begin(), all.end(), first), all.end()) << first.str() << " not listed";
  std::vector<DeviceType> built = built_backends();
  EXPECT_NE(std::find(built.begin(), built.end(), GetParam()), built.end());
  for (int i = 0; i < b->device_count(); ++i) {
    Availability a = b->availability(i);
    EXPECT_FALSE(a.detail.empty()) << "device " << i << " gives no name or reason";
    Capabilities c = b->capabilities(i);  // must not throw, available or not
    if (a.available) {
      EXPECT_GE(c.subgroup_size, 1);
      EXPECT_GT(c.total_memory, 0u);
    }
  }
}

TEST_P(GpuBackend, UnavailableDeviceGivesTheRuntimesReason) {
  PORTA_BACKEND_OR_SKIP(b);
  Availability a = b->availability(0);
  if (a.available) GTEST_SKIP() << "device present: " << a.detail;
  // The reason comes from the vendor runtime and names the call that gave it.
  EXPECT_NE(a.detail.find("GetDeviceCount"), std::string::npos) << a.detail;
  Device d{GetParam(), 0};
  try {
    Tensor::empty({4}, DType::f32, d);
    ADD_FAILURE() << "allocating on an unavailable device did not throw";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find(a.detail), std::string::npos) << e.what();
  }
  EXPECT_EQ(device_unusable(d), a.detail);
}

TEST_P(GpuBackend, NonexistentIndexIsUnavailable) {
  PORTA_BACKEND_OR_SKIP(b);
  Availability a = b->availability(b->device_count() + 3);
  EXPECT_FALSE(a.available);
  EXPECT_FALSE(a.detail.empty());
}

// ---- on a device ----------------------------------------------------------------------------

// Skips the test, with the runtime's reason, unless device 0 of the backend can run.
#define PORTA_SKIP_WITHOUT_DEVICE(d)                                        \
  do {                                                                      \
    std::string why_ = device_unusable(d);                                  \
    if (!why_.empty()) GTEST_SKIP() << (d).str() << " unavailable: " << why_; \
  } while (0)

TEST_P(GpuBackend, RoundTripAndDeviceCopy) {
  Device d{GetParam(), 0};
  PORTA_SKIP_WITHOUT_DEVICE(d);
  std::vector<float> host(1000);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f - 7.0f;
  Tensor t = Tensor::from_host(host.data(), {10, 100}, DType::f32, d);
  Tensor u = t.slice(1, 3, 50, 2).contiguous();  // strided device view through the core
  std::vector<double> got = u.to_doubles();
  ASSERT_EQ(got.size(), 10u * 24u);
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 24; ++c) ASSERT_EQ(got[r * 24 + c], host[r * 100 + 3 + 2 * c]);
  Tensor v = Tensor::empty({10, 100}, DType::f32, d);
  v.copy_(t);
  EXPECT_EQ(v.to_doubles(), t.to_doubles());
}

TEST_P(GpuBackend, OutOfMemoryIsAnErrorAndTheDeviceStaysUsable) {
  Device d{GetParam(), 0};
  PORTA_SKIP_WITHOUT_DEVICE(d);
  size_t too_much = size_t{1} << 52;  // 4 PiB
  try {
    Tensor::empty({static_cast<int64_t>(too_much / 4)}, DType::f32, d);
    ADD_FAILURE() << "a 4 PiB allocation succeeded";
  } catch (const OutOfMemory& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("requested"), std::string::npos) << m;
    EXPECT_NE(m.find("free"), std::string::npos) << m;
  }
  Tensor ok = Tensor::from_values({1, 2, 3}, {3}, DType::f32).to(d);
  EXPECT_EQ(ok.to_doubles(), (std::vector<double>{1, 2, 3}));
}

// The arithmetic-peak probe porta bench's ceiling comes from (kernels/cuda/fma_probe.cu), on
// every device of the kind (gpu_emu: warp 32 and 64): it runs and its chains end where they
// must (else it throws); f32 only.
TEST_P(GpuBackend, FmaProbeRunsAndChecksItsChains) {
  PORTA_SKIP_WITHOUT_DEVICE((Device{GetParam(), 0}));
  Backend& b = *find_backend(GetParam());
  for (int i = 0; i < b.device_count(); ++i) {
    Device d{GetParam(), i};
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    double g = b.measure_fma_gflops(i, DType::f32);
    EXPECT_GT(g, 0);
    EXPECT_TRUE(std::isfinite(g));
    EXPECT_EQ(b.measure_fma_gflops(i, DType::f16), 0);
    EXPECT_EQ(b.measure_fma_gflops(i, DType::f64), 0);
  }
}

TEST_P(GpuBackend, TimerMeasuresDeviceWork) {
  Device d{GetParam(), 0};
  PORTA_SKIP_WITHOUT_DEVICE(d);
  Backend& b = *find_backend(GetParam());
  std::unique_ptr<Timer> timer = b.create_timer(0);
  ASSERT_NE(timer, nullptr);
  Tensor a = Tensor::zeros({1 << 20}, DType::f32, d);
  timer->start();
  Tensor c = call_op("Add", {a, a}).at(0);
  timer->stop();
  EXPECT_GE(timer->elapsed_us(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Backends, GpuBackend, ::testing::ValuesIn(gpu_device_types()),
                         [](const auto& info) { return std::string(device_type_name(info.param)); });

}  // namespace
}  // namespace porta::test
