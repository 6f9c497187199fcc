// porta runtime — what the C ABI asks of a device kind's backend for kernels written outside
// porta (plugins), without runtime/ including any backend: each backend that offers something
// installs a table for its kind at library load (kernels/vulkan/c_api_launch.cpp for Vulkan,
// backends/cuda/gpu_backend.cu for cuda, hip and gpu_emu). A kind without a table, or a null
// member, does not offer that service, and the C ABI says so in its error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "porta/op.hpp"

namespace porta::detail {

struct KernelServices {
  // ---- kinds whose kernels take device addresses and a queue (cuda, hip, gpu_emu) ----------
  /// The queue porta runs device `index`'s work on (cudaStream_t, hipStream_t, the emulator's
  /// stream), with that device made current on the calling thread.
  void* (*stream)(int index) = nullptr;
  /// The address a kernel uses for byte `byte_offset` of the allocation `handle`.
  void* (*device_pointer)(void* handle, size_t byte_offset) = nullptr;

  // ---- kinds whose kernels are shaders bound to buffers (vulkan) ---------------------------
  /// Adds caller-provided SPIR-V words under `name` (validated by the caller).
  void (*register_shader)(const std::string& name, const uint32_t* words, size_t count) = nullptr;
  /// Records one dispatch of a shader added by register_shader.
  void (*dispatch)(const KernelContext& ctx, const std::string& shader, const std::vector<Tensor>& tensors,
                   const std::vector<bool>& writes, const std::vector<uint32_t>& push, uint32_t local_size,
                   const uint32_t groups[3]) = nullptr;
};

/// Installs `services` (static storage) for `kind`; a second table for a kind replaces the first.
void install_kernel_services(DeviceType kind, const KernelServices* services);
/// The table installed for `kind`, or nullptr (backend not built, or it offers none).
const KernelServices* kernel_services(DeviceType kind);
/// "cuda, gpu_emu": the kinds whose table has a `stream` (for messages).
std::string kinds_with_streams();
/// The table of the kind that takes shaders from outside (`register_shader` and `dispatch`:
/// the Vulkan backend's), or nullptr when no backend built here offers them.
const KernelServices* shader_services();
/// "vulkan": the kinds whose table has `dispatch` (for messages).
std::string kinds_with_shaders();

}  // namespace porta::detail
