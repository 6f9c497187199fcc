// porta vulkan — the table of SPIR-V shaders embedded at build time (see
// third_party/backend_vulkan.cmake). Each generated file registers one "shader:variant".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace porta::vk {

/// Adds an embedded SPIR-V binary under `name` ("unary:f32"); returns true (for static init).
bool register_shader(const char* name, const unsigned char* spirv, size_t bytes);
/// The SPIR-V words of a shader, or nullptr when no such shader/variant was built.
const std::vector<uint32_t>* find_shader(std::string_view name);
/// Names of every embedded shader (for diagnostics).
std::vector<std::string_view> shader_names();

}  // namespace porta::vk
