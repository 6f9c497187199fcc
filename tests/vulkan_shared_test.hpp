// porta tests — what the Vulkan suites share: the device, the requirement that it be usable,
// the test hooks as scoped overrides, calls resolved on it, and every case of named ops against
// the float64 reference. Compiled only with the Vulkan backend (vulkan_shared_test.cpp).
#pragma once
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "backends/vulkan/vk_validation.hpp"
#include "porta/dispatch.hpp"
#include "tests/test_util.hpp"

namespace porta::test {

inline constexpr Device kVk{DeviceType::vulkan, 0};

/// For DisabledKernels: every Conv implementation for CPU-like devices (kernels/vulkan/conv.cpp
/// and conv_winograd.cpp), leaving the GPUs' "implicit_gemm" and "direct".
inline constexpr const char* kTexelConvKernels =
    "vulkan:Conv:rows,vulkan:Conv:grouped_rows,vulkan:Conv:depthwise_rows,vulkan:Conv:depthwise,"
    "vulkan:Conv:winograd,vulkan:Conv:im2col";
/// For DisabledKernels: every MatMul and Gemm implementation for CPU-like devices
/// (kernels/vulkan/matmul.cpp), leaving the GPUs' "tiled".
inline constexpr const char* kTexelGemmKernels =
    "vulkan:MatMul:rows,vulkan:MatMul:texel,vulkan:Gemm:rows,vulkan:Gemm:texel";

// Fails (never skips) when the backend is built but the device cannot be used.
#define REQUIRE_VULKAN()                                                                          \
  do {                                                                                            \
    std::string why = device_unusable(kVk);                                                       \
    ASSERT_TRUE(why.empty()) << "the Vulkan backend is built but vulkan:0 is unusable: " << why; \
  } while (0)

/// Forces the driver loop cap kernels size themselves to, for one scope (0 restores the device's).
struct LoopCapOverride {
  explicit LoopCapOverride(uint64_t n) { vk::set_loop_limit_override(n); }
  ~LoopCapOverride() { vk::set_loop_limit_override(0); }
  LoopCapOverride(const LoopCapOverride&) = delete;
  LoopCapOverride& operator=(const LoopCapOverride&) = delete;
};

/// Host tensors copied to vulkan:0 (undefined ones, absent optional inputs, stay undefined).
std::vector<Tensor> to_vk(const std::vector<Tensor>& host);
/// What the dispatcher picks for `op` on vulkan:0 with these device inputs (attributes completed
/// with their defaults); the dispatch dtype defaults to input 0's.
Resolution resolve_vk(const char* op, const std::vector<Tensor>& inputs, const Attributes& attrs = {},
                      std::optional<DType> dtype = std::nullopt);
/// Runs every f32 case of the named ops on vulkan:0 against the float64 reference (cases the
/// reference refuses are the conformance suite's); returns how many were checked.
int check_cases(const std::vector<const char*>& names);

}  // namespace porta::test
