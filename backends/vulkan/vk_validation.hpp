// porta vulkan — validation-layer hooks for tests. No Vulkan types, so tests can include it.
//
// With PORTA_VULKAN_VALIDATION=1 in the environment (read when the Vulkan instance is created)
// the backend enables VK_LAYER_KHRONOS_validation with synchronization validation and records
// every error the layer reports.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace porta::vk {

/// True when the instance was created with the validation layer and sync validation.
bool validation_enabled();
/// Error messages recorded since the last call (and clears them).
std::vector<std::string> take_validation_errors();
/// Called (on the thread that made the Vulkan call) for every validation error; replaces any
/// earlier listener. Pass nullptr to remove.
void set_validation_listener(std::function<void(const std::string&)> listener);
/// Test hook: when false, dispatches are recorded without the barriers hazards need (to show
/// that synchronization validation catches a missing barrier). Default true.
void set_barriers_enabled(bool enabled);
/// Test hook: when false, reductions use the shared-memory tree instead of subgroup
/// arithmetic, so both strategies can be checked on one device. Default true.
void set_subgroup_reductions(bool enabled);
/// Test hook: when false, Conv uses the direct kernel instead of the implicit GEMM. Default true.
void set_conv_implicit_gemm(bool enabled);

}  // namespace porta::vk
