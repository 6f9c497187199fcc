// porta runtime — dtype names and conversions, device names, version, small helpers.
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>

#include "porta/backend.hpp"
#include "porta/device.hpp"
#include "porta/dtype.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/plugin_staging.hpp"

namespace porta {

const char* version() { return PORTA_VERSION; }

static constexpr const char* kDTypeNames[kNumDTypes] = {"f32", "f16", "bf16", "f64", "i64",
                                                        "i32", "i8",  "u8",   "bool"};

std::string_view dtype_name(DType t) {
  auto i = static_cast<unsigned>(t);
  return i < kNumDTypes ? kDTypeNames[i] : "invalid";
}

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (name == kDTypeNames[i]) return static_cast<DType>(i);
  if (name == "float32" || name == "float") return DType::f32;
  if (name == "float16" || name == "half") return DType::f16;
  if (name == "bfloat16") return DType::bf16;
  if (name == "float64" || name == "double") return DType::f64;
  if (name == "int64") return DType::i64;
  if (name == "int32") return DType::i32;
  if (name == "int8") return DType::i8;
  if (name == "uint8") return DType::u8;
  if (name == "boolean") return DType::boolean;
  throw DTypeError(str("[dtype] unknown dtype '", name,
                       "', expected one of f32 f16 bf16 f64 i64 i32 i8 u8 bool"));
}

std::string dtype_set_names(DTypeSet set) {
  std::string out;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (set & (1u << i)) {
      if (!out.empty()) out += ",";
      out += kDTypeNames[i];
    }
  }
  return out.empty() ? "none" : out;
}

uint16_t f32_to_f16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mant = x & 0x7fffffu;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
  int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exponent
  return static_cast<uint16_t>(half);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {
      int e = -1;
      do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_bf16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

float bf16_to_f32(uint16_t v) { return std::bit_cast<float>(static_cast<uint32_t>(v) << 16); }

// ---- device kinds -------------------------------------------------------------------------
// Names live in a fixed table that only grows: slot i is written before the count that
// publishes it, so device_type_name reads without a lock and its string_view stays valid.
namespace {

struct DeviceKinds {
  std::mutex mutex;
  std::array<std::string, kMaxDeviceTypes> names;
  std::atomic<int> count{0};
  DeviceKinds() {
    for (const char* n : {"cpu", "cuda", "hip", "vulkan"}) names[count++] = n;
  }
};

DeviceKinds& kinds() {
  static auto* k = new DeviceKinds();  // never destroyed: names are read during exit
  return *k;
}

std::string kind_list(std::string_view suffix) {
  std::string out;
  for (DeviceType t : device_types()) {
    out += std::string(device_type_name(t)) + (t == DeviceType::cpu ? "" : std::string(suffix)) + ", ";
  }
  return out + "auto";
}

}  // namespace

std::string_view device_type_name(DeviceType t) {
  DeviceKinds& k = kinds();
  return t.id < k.count.load(std::memory_order_acquire) ? std::string_view(k.names[t.id]) : "invalid";
}

std::optional<DeviceType> find_device_type(std::string_view name) {
  DeviceKinds& k = kinds();
  int n = k.count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (k.names[i] == name) return DeviceType(static_cast<uint8_t>(i));
  return std::nullopt;
}

DeviceType register_device_type(std::string_view name) {
  bool ok = !name.empty() && name.size() < 32 && name[0] >= 'a' && name[0] <= 'z' && name != "auto";
  for (char c : name) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok)
    throw InvalidArgument(str("[device] device kind name should be 1-31 lower-case letters, digits or '_' "
                              "starting with a letter (and not 'auto'), got '", name, "'"));
  DeviceKinds& k = kinds();
  std::lock_guard lock(k.mutex);
  if (auto t = find_device_type(name)) return *t;
  int n = k.count.load();
  if (n >= kMaxDeviceTypes)
    throw InvalidArgument(str("[device] cannot register device kind '", name, "': all ", kMaxDeviceTypes,
                              " kinds are taken (", kind_list(""), ")"));
  k.names[n] = std::string(name);
  k.count.store(n + 1, std::memory_order_release);
  return DeviceType(static_cast<uint8_t>(n));
}

std::vector<DeviceType> device_types() {
  std::vector<DeviceType> out;
  int n = kinds().count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) out.push_back(DeviceType(static_cast<uint8_t>(i)));
  return out;
}

std::string Device::str() const {
  if (type == DeviceType::cpu) return "cpu";
  return std::string(device_type_name(type)) + ":" + std::to_string(index);
}

Device Device::parse(std::string_view text) {
  detail::ensure_env_plugins();  // kinds of PORTA_PLUGIN_PATH plugins are known from here on
  if (text == "auto") {
    // The available device whose backend reports the highest preference; cpu otherwise.
    Device best = Device::cpu();
    int best_rank = 0;
    for (DeviceType t : built_backends()) {
      Backend* b = find_backend(t);
      for (int i = 0; b && i < b->device_count(); ++i) {
        if (!b->availability(i).available) continue;
        int rank = b->capabilities(i).preference;
        if (rank > best_rank) best = Device{t, i}, best_rank = rank;
      }
    }
    return best;
  }
  std::string_view kind = text;
  int index = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    kind = text.substr(0, colon);
    std::string_view num = text.substr(colon + 1);
    if (num.empty() || num.size() > 4 || num.find_first_not_of("0123456789") != std::string_view::npos)
      throw InvalidArgument(porta::str("[device] bad device index in '", text, "', expected one of ",
                                       kind_list(":N")));
    index = std::stoi(std::string(num));
  }
  if (auto t = find_device_type(kind)) {
    if (*t == DeviceType::cpu && index != 0)
      throw InvalidArgument(porta::str("[device] there is one cpu device, got '", text, "'"));
    return Device{*t, index};
  }
  for (const UnbuiltBackend& u : backends_not_built())
    if (u.kind == kind)
      throw BackendUnavailable(porta::str("[device] ", text, ": this porta was built without the ", u.kind,
                                          " backend (", u.reason, ")"));
  throw InvalidArgument(porta::str("[device] unknown device '", text, "', expected one of ", kind_list(":N"),
                                   " (a plugin's kind is known once the plugin is loaded)"));
}

std::string shape_str(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += "x";
    out += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return out;
}

}  // namespace porta
