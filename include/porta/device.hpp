// porta — devices.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace porta {

/// The kinds of device porta knows. A kind whose backend is not built is reported unavailable.
enum class DeviceType : uint8_t { cpu = 0, cuda = 1, hip = 2, vulkan = 3 };
inline constexpr int kNumDeviceTypes = 4;

std::string_view device_type_name(DeviceType t);

/// A device: a kind and an index ("cpu", "cuda:0", "vulkan:1").
struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  /// Parses "cpu", "cuda", "cuda:1", "vulkan:0", "hip:0" and "auto" (the best available
  /// device: cuda > hip > discrete/integrated vulkan > cpu). Throws InvalidArgument.
  static Device parse(std::string_view text);
  static Device cpu() { return {}; }

  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  bool operator<(const Device& o) const {
    return type != o.type ? type < o.type : index < o.index;
  }
};

}  // namespace porta

template <>
struct std::hash<porta::Device> {
  size_t operator()(const porta::Device& d) const noexcept {
    return (static_cast<size_t>(d.type) << 16) ^ static_cast<size_t>(d.index);
  }
};
