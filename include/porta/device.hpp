// porta — devices and the open set of device kinds.
//
// A device kind is a small value: the built-in kinds (cpu, cuda, hip, vulkan) are named
// constants, and further kinds (an emulator, a vendor's NPU) register by name at run time —
// in-tree with register_device_type, from a plugin with porta_register_backend (porta/plugin.h).
#pragma once
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace porta {

/// A device kind: an id given out in registration order (the built-ins have ids 0..3).
struct DeviceType {
  uint8_t id = 0;

  constexpr DeviceType() = default;
  constexpr explicit DeviceType(uint8_t value) : id(value) {}
  /// `static_cast<int>(type)`: the id, for tables indexed by kind (size kMaxDeviceTypes).
  template <class I>
    requires std::is_integral_v<I>
  constexpr explicit operator I() const { return static_cast<I>(id); }

  friend constexpr bool operator==(DeviceType a, DeviceType b) = default;
  friend constexpr auto operator<=>(DeviceType a, DeviceType b) = default;

  static const DeviceType cpu;
  static const DeviceType cuda;
  static const DeviceType hip;
  static const DeviceType vulkan;
};
inline constexpr DeviceType DeviceType::cpu{0};
inline constexpr DeviceType DeviceType::cuda{1};
inline constexpr DeviceType DeviceType::hip{2};
inline constexpr DeviceType DeviceType::vulkan{3};

/// Kinds built into porta's sources (ids below this); others register at run time.
inline constexpr int kNumBuiltinDeviceTypes = 4;
/// Upper bound of device kinds in one process: every id is below it.
inline constexpr int kMaxDeviceTypes = 32;
/// Size of a table indexed by a kind's id (every registered kind fits).
inline constexpr int kNumDeviceTypes = kMaxDeviceTypes;

/// The kind's name ("cpu", "vulkan", "hostsim"), or "invalid" for an id never given out.
std::string_view device_type_name(DeviceType t);
/// The kind named `name`, registering it when new (the next id). Names are lower-case
/// letters, digits and '_', starting with a letter, at most 31 characters; "auto" is not a
/// kind. Registering a known name returns its kind, so a backend and its kernels may each
/// ask for it in any order. Throws InvalidArgument for a bad name or when kMaxDeviceTypes
/// kinds exist.
DeviceType register_device_type(std::string_view name);
/// The kind named `name`, if registered.
std::optional<DeviceType> find_device_type(std::string_view name);
/// Every registered kind, in id order (with or without a backend).
std::vector<DeviceType> device_types();

/// A device: a kind and an index ("cpu", "cuda:0", "vulkan:1", "hostsim:0").
struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  /// Parses "<kind>" or "<kind>:<index>" for any registered kind, and "auto": the available
  /// device whose backend reports the highest Capabilities::preference (cpu when none is
  /// above 0). Throws InvalidArgument naming the known kinds.
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
struct std::hash<porta::DeviceType> {
  size_t operator()(porta::DeviceType t) const noexcept { return t.id; }
};

template <>
struct std::hash<porta::Device> {
  size_t operator()(const porta::Device& d) const noexcept {
    return (static_cast<size_t>(d.type.id) << 16) ^ static_cast<size_t>(d.index);
  }
};
