// The C ABI's GPU-kernel calls (porta_tensor_device_pointer, porta_kernel_stream,
// porta_kernel_scratch) where they have no GPU meaning: what they do in cpu kernels (defined:
// host addresses, host scratch), the errors in cpu and Vulkan kernels and in `supports`, and
// the scratch limits. Kernels are registered through the C ABI from this process, as a plugin's
// would be. tests/gpu_plugin_emu_test.cpp covers them on the emulator's devices.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "porta/porta.h"
#include "porta/porta.hpp"
#include "tests/c_abi_test_ops.hpp"
#include "tests/test_util.hpp"

namespace {

// Which ABI call the probe kernel makes, and what it reports back.
struct Probe {
  std::string what;
  porta_status status = PORTA_OK;
  std::string message;
  void* pointer = nullptr;
  porta_status supports_status = PORTA_ERROR_INTERNAL;  ///< what `supports` found ("supports")
  std::string supports_message;
};
thread_local Probe probe;

porta_status record(porta_status s) {
  probe.status = s;
  probe.message = s == PORTA_OK ? "" : porta_last_error();
  return s;
}

// Y = X * 2 through the probe: on the cpu through scratch; on other kinds the call under test.
porta_status probe_kernel(porta_kernel_context* ctx, void*) {
  porta_tensor x, y;
  if (porta_kernel_input(ctx, 0, &x) || porta_kernel_output(ctx, 0, &y)) return PORTA_ERROR_INTERNAL;
  size_t bytes = 0;
  porta_tensor_nbytes(x, &bytes);
  if (probe.what == "stream") {
    void* stream = nullptr;
    return record(porta_kernel_stream(ctx, &stream));
  }
  if (probe.what == "scratch_huge") return record(porta_kernel_scratch(ctx, SIZE_MAX / 2, &probe.pointer));
  if (probe.what == "scratch_zero") return record(porta_kernel_scratch(ctx, 0, &probe.pointer));
  if (probe.what == "device_pointer") return record(porta_tensor_device_pointer(x, &probe.pointer));
  // "double": device pointers of cpu tensors are their host pointers; scratch is host memory.
  void *px, *py, *data, *scratch;
  if (record(porta_tensor_device_pointer(x, &px)) || record(porta_tensor_device_pointer(y, &py))) return probe.status;
  if (record(porta_tensor_data(x, &data))) return probe.status;
  if (data != px) return porta_set_error(PORTA_ERROR_INTERNAL, "device pointer differs from tensor_data on the cpu");
  if (record(porta_kernel_scratch(ctx, bytes + 1, &scratch))) return probe.status;
  if (reinterpret_cast<uintptr_t>(scratch) % 64) return porta_set_error(PORTA_ERROR_INTERNAL, "scratch not 64-byte aligned");
  for (size_t i = 0; i < bytes / 4; ++i) static_cast<float*>(scratch)[i] = static_cast<const float*>(px)[i] * 2;
  std::memcpy(py, scratch, bytes);
  return PORTA_OK;
}

int probe_supports(porta_kernel_context* ctx, void*, char* reason, size_t capacity) {
  void* stream = nullptr;
  void* scratch = nullptr;
  porta_status a = porta_kernel_stream(ctx, &stream);
  std::string why = porta_last_error();
  porta_status b = porta_kernel_scratch(ctx, 16, &scratch);
  if (probe.what == "supports") {
    probe.supports_status =
        a == PORTA_ERROR_INVALID_ARGUMENT && b == PORTA_ERROR_INVALID_ARGUMENT ? PORTA_OK : PORTA_ERROR_INTERNAL;
    probe.supports_message = why;
  }
  (void)reason;
  (void)capacity;
  return 1;
}

void register_probe_once() {
  static const bool done = [] {
    porta::test::register_twice_op("AbiProbe");
    for (int32_t kind : {PORTA_DEVICE_CPU, PORTA_DEVICE_VULKAN}) {
      porta_kernel_def k;
      std::memset(&k, 0, sizeof k);
      k.struct_size = sizeof k;
      k.op = "com.porta.test::AbiProbe";
      k.backend = kind;
      k.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
      k.num_inputs = 1;
      k.num_outputs = 1;
      k.fn = probe_kernel;
      k.supports = probe_supports;
      EXPECT_EQ(porta_register_kernel(&k), PORTA_OK) << porta_last_error();
    }
    return true;
  }();
  (void)done;
}

// Runs the probe op on `device` with X = [1, 2, 3].
porta_status run_probe(const char* device, const std::string& what, std::vector<float>* y = nullptr) {
  register_probe_once();
  probe = Probe{what};
  porta_device d;
  EXPECT_EQ(porta_device_parse(device, &d), PORTA_OK);
  float xs[3] = {1, 2, 3};
  int64_t shape[1] = {3};
  porta_tensor host = nullptr, x = nullptr, out = nullptr;
  EXPECT_EQ(porta_tensor_wrap_host(xs, sizeof xs, PORTA_F32, shape, 1, &host), PORTA_OK);
  EXPECT_EQ(porta_tensor_to_device(host, d, &x), PORTA_OK) << porta_last_error();
  porta_status s = porta_op_call("com.porta.test::AbiProbe", &x, 1, nullptr, &out, 1);
  std::string message = s == PORTA_OK ? "" : porta_last_error();
  if (s == PORTA_OK && y) {
    y->resize(3);
    EXPECT_EQ(porta_tensor_copy_to_host(out, y->data(), 12), PORTA_OK);
  }
  porta_tensor_free(out);
  porta_tensor_free(x);
  porta_tensor_free(host);
  if (s != PORTA_OK) probe.message = message;  // the op call's message (the kernel's, tagged)
  return s;
}

bool vulkan_usable() {
  porta_device d;
  if (porta_device_parse("vulkan:0", &d) != PORTA_OK) return false;
  return porta::test::device_unusable(porta::Device::parse("vulkan:0")).empty();
}

}  // namespace

TEST(KernelAbi, CpuKernelsGetHostAddressesAndHostScratch) {
  std::vector<float> y;
  ASSERT_EQ(run_probe("cpu", "double", &y), PORTA_OK) << probe.message;
  EXPECT_EQ(y, (std::vector<float>{2, 4, 6}));
}

TEST(KernelAbi, StreamFromACpuKernelIsADeviceMismatchNamingKindsWithStreams) {
  EXPECT_EQ(run_probe("cpu", "stream"), PORTA_ERROR_DEVICE_MISMATCH);
  EXPECT_NE(probe.message.find("[porta_kernel_stream] called from a cpu kernel; only kernels of device kinds with a "
                               "stream have one"),
            std::string::npos)
      << probe.message;
}

TEST(KernelAbi, ScratchLimitsAreClearErrors) {
  EXPECT_EQ(run_probe("cpu", "scratch_zero"), PORTA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(probe.message.find("[porta_kernel_scratch] bytes should be at least 1, got 0"), std::string::npos)
      << probe.message;
  EXPECT_EQ(run_probe("cpu", "scratch_huge"), PORTA_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(probe.message.find(std::to_string(SIZE_MAX / 2) + " bytes of scratch (0 already taken in this call) exceed cpu's limit of"),
            std::string::npos)
      << probe.message;
}

TEST(KernelAbi, SupportsCallbacksGetNoStreamAndNoScratch) {
  ASSERT_EQ(run_probe("cpu", "supports"), PORTA_OK) << probe.message;
  EXPECT_EQ(probe.supports_status, PORTA_OK);
  EXPECT_NE(probe.supports_message.find("[porta_kernel_stream] a supports callback cannot use it"), std::string::npos)
      << probe.supports_message;
}

TEST(KernelAbi, VulkanKernelsHaveNoStreamNoAddressesNoScratch) {
  if (!vulkan_usable()) GTEST_SKIP() << "no usable vulkan:0";
  EXPECT_EQ(run_probe("vulkan:0", "stream"), PORTA_ERROR_DEVICE_MISMATCH);
  EXPECT_NE(probe.message.find("called from a vulkan:0 kernel"), std::string::npos) << probe.message;
  EXPECT_EQ(run_probe("vulkan:0", "device_pointer"), PORTA_ERROR_DEVICE_MISMATCH);
  EXPECT_NE(probe.message.find("has no address a kernel can use"), std::string::npos) << probe.message;
  EXPECT_NE(probe.message.find("porta_vulkan_dispatch"), std::string::npos) << probe.message;
  EXPECT_EQ(run_probe("vulkan:0", "double"), PORTA_ERROR_DEVICE_MISMATCH);
}
