// porta runtime — the per-kind tables of kernel services (kernel_services.hpp).
#include "runtime/kernel_services.hpp"

#include <array>
#include <atomic>

#include "porta/util.hpp"

namespace porta::detail {
namespace {

// Indexed by kind id (a uint8_t): installed at library load, read by any thread afterwards.
std::array<std::atomic<const KernelServices*>, 256>& tables() {
  static std::array<std::atomic<const KernelServices*>, 256> t{};
  return t;
}

}  // namespace

void install_kernel_services(DeviceType kind, const KernelServices* services) {
  tables()[kind.id].store(services, std::memory_order_release);
}

const KernelServices* kernel_services(DeviceType kind) {
  return tables()[kind.id].load(std::memory_order_acquire);
}

namespace {

// "a, b": the kinds whose table offers what `has` asks, for messages.
std::string kinds_where(bool (*has)(const KernelServices&)) {
  std::string names;
  for (DeviceType kind : device_types())
    if (const KernelServices* s = kernel_services(kind); s && has(*s))
      names += str(names.empty() ? "" : ", ", device_type_name(kind));
  return names.empty() ? "none in this build" : names;
}

bool offers_shaders(const KernelServices& s) { return s.register_shader && s.dispatch; }

}  // namespace

std::string kinds_with_streams() {
  return kinds_where([](const KernelServices& s) { return s.stream != nullptr; });
}

const KernelServices* shader_services() {
  for (DeviceType kind : device_types())
    if (const KernelServices* s = kernel_services(kind); s && offers_shaders(*s)) return s;
  return nullptr;
}

std::string kinds_with_shaders() { return kinds_where(offers_shaders); }

}  // namespace porta::detail
