// porta runtime — how the C ABI reaches the Vulkan backend without including it: the backend,
// when built, installs these hooks at library load (kernels/vulkan/c_api_launch.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "porta/op.hpp"

namespace porta::detail {

struct VulkanHooks {
  /// Adds caller-provided SPIR-V words under `name` (validated by the caller).
  void (*register_shader)(const std::string& name, const uint32_t* words, size_t count);
  /// Records one dispatch of a shader added by register_shader.
  void (*dispatch)(const KernelContext& ctx, const std::string& shader, const std::vector<Tensor>& tensors,
                   const std::vector<bool>& writes, const std::vector<uint32_t>& push, uint32_t local_size,
                   const uint32_t groups[3]);
};
/// nullptr when porta was built without Vulkan.
const VulkanHooks*& vulkan_hooks();

}  // namespace porta::detail
