// porta vulkan — validation-layer hooks for tests. No Vulkan types, so tests can include it.
//
// With PORTA_VULKAN_VALIDATION=1 in the environment (read when the Vulkan instance is created)
// the backend enables VK_LAYER_KHRONOS_validation with synchronization validation and records
// every error the layer reports.
#pragma once
#include <cstdint>
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

/// Test hook: kernels size their loops as if the driver ended them after `iterations` per
/// invocation (0 = the device's measured cap), so the paths for a capped driver run with small
/// shapes on any device.
void set_loop_limit_override(uint64_t iterations);
uint64_t loop_limit_override();
/// Test hook: kernels that window large operands (MatMul/Gemm) and the binding checks
/// (fits_bindings, launch) treat `bytes` as the largest storage-buffer binding when it is below
/// the device's maxStorageBufferRange (0 = the device's own), so the window paths run with
/// small shapes.
void set_binding_limit_override(uint64_t bytes);
uint64_t binding_limit_override();

/// Test hook: device `index` reports at most `x` workgroups along x (0 = its own limit), so
/// every kernel's grid past the per-dimension limit (spread over y, or declined) runs with small
/// shapes.
void set_group_limit_override(int index, uint32_t x);

/// Test hook: frees the device's unused cached memory blocks (waiting for its work first), so
/// the next allocations create blocks again (the fault-injection sweep counts them).
void release_cached_memory(int index);
/// Where a simulated device loss strikes.
enum class LossPoint { submit, fence_wait };
/// Test hook: the n-th vkQueueSubmit (or vkWaitForFences, after really waiting) from now, on
/// any Vulkan device, reports VK_ERROR_DEVICE_LOST; 0 turns it off. The environment setting
/// PORTA_VULKAN_DEVICE_LOST=submit:N or wait:N does the same from the first Vulkan use. A device
/// that reported a loss, simulated or real, refuses all later work with a BackendError.
void inject_device_loss(long n, LossPoint where);
/// True when device `index` reported VK_ERROR_DEVICE_LOST.
bool device_lost(int index);
/// Test hook: makes device `index` usable again after a *simulated* loss (the real device was
/// never lost). Returns false, changing nothing, when the loss was real.
bool forget_simulated_loss(int index);

}  // namespace porta::vk
