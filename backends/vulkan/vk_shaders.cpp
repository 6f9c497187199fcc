// porta vulkan — embedded shader table.
#include "backends/vulkan/vk_shaders.hpp"

#include <cstring>
#include <map>
#include <string>

namespace porta::vk {
namespace {

// Function-local so generated files can register during static initialisation in any order.
std::map<std::string, std::vector<uint32_t>, std::less<>>& table() {
  static auto* t = new std::map<std::string, std::vector<uint32_t>, std::less<>>();
  return *t;
}

}  // namespace

bool register_shader(const char* name, const unsigned char* spirv, size_t bytes) {
  std::vector<uint32_t> words(bytes / 4);
  std::memcpy(words.data(), spirv, words.size() * 4);
  table()[name] = std::move(words);
  return true;
}

const std::vector<uint32_t>* find_shader(std::string_view name) {
  auto it = table().find(name);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string_view> shader_names() {
  std::vector<std::string_view> out;
  for (auto& [name, words] : table()) out.push_back(name);
  return out;
}

}  // namespace porta::vk
