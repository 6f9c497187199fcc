// Vulkan side of the C ABI's porta_vulkan_register_shader / porta_vulkan_dispatch: shaders
// given by plugins live in the embedded-shader table as "<name>:ext" and are launched like
// porta's own (same barriers, same pipeline cache).
#include <cstring>

#include "backends/vulkan/vk_shaders.hpp"
#include "kernels/vulkan/vk_kernel.hpp"
#include "runtime/kernel_services.hpp"

namespace porta::vk {
namespace {

void register_external(const std::string& name, const uint32_t* words, size_t count) {
  register_shader((name + ":ext").c_str(), reinterpret_cast<const unsigned char*>(words), count * 4);
}

void dispatch_external(const KernelContext& ctx, const std::string& shader, const std::vector<Tensor>& tensors,
                       const std::vector<bool>& writes, const std::vector<uint32_t>& push, uint32_t local_size,
                       const uint32_t groups[3]) {
  if (!find_shader(shader + ":ext"))
    throw InvalidArgument(str("[porta_vulkan_dispatch] no shader '", shader,
                              "' was registered with porta_vulkan_register_shader"));
  Launch l;
  l.shader = shader;
  l.variant = "ext";
  l.local_size = local_size;
  for (size_t i = 0; i < tensors.size(); ++i) l.args.push_back({tensors[i], writes[i]});
  l.push = push;
  const DeviceCaps& caps = device_caps(ctx);
  for (int i = 0; i < 3; ++i) {
    if (groups[i] == 0 && tensors.empty()) return;
    if (groups[i] > caps.max_groups[i])
      throw InvalidArgument(str("[porta_vulkan_dispatch] ", groups[i], " workgroups along axis ", i,
                                " exceed the device limit ", caps.max_groups[i]));
    l.groups[i] = groups[i];
  }
  if (l.groups[0] == 0 || l.groups[1] == 0 || l.groups[2] == 0) return;  // no work
  launch(ctx, std::move(l));
}

const bool installed = [] {
  static const detail::KernelServices services = [] {
    detail::KernelServices s;
    s.register_shader = register_external;
    s.dispatch = dispatch_external;
    return s;
  }();
  detail::install_kernel_services(DeviceType::vulkan, &services);
  return true;
}();

}  // namespace
}  // namespace porta::vk
