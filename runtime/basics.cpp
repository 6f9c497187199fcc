// porta runtime — dtype names and conversions, device names, version, small helpers.
#include <bit>
#include <cmath>
#include <cstring>

#include "porta/backend.hpp"
#include "porta/device.hpp"
#include "porta/dtype.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

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

static constexpr const char* kDeviceTypeNames[kNumDeviceTypes] = {"cpu", "cuda", "hip", "vulkan"};

std::string_view device_type_name(DeviceType t) {
  auto i = static_cast<unsigned>(t);
  return i < kNumDeviceTypes ? kDeviceTypeNames[i] : "invalid";
}

std::string Device::str() const {
  if (type == DeviceType::cpu) return "cpu";
  return std::string(device_type_name(type)) + ":" + std::to_string(index);
}

Device Device::parse(std::string_view text) {
  if (text == "auto") {
    // Best available: cuda > hip > vulkan (a real GPU first) > cpu.
    for (DeviceType t : {DeviceType::cuda, DeviceType::hip, DeviceType::vulkan}) {
      Backend* b = find_backend(t);
      if (!b) continue;
      for (int i = 0; i < b->device_count(); ++i) {
        if (!b->availability(i).available) continue;
        std::string kind = b->capabilities(i).type;
        if (t == DeviceType::vulkan && kind == "cpu") continue;  // lavapipe is no faster than cpu
        return Device{t, i};
      }
    }
    return Device::cpu();
  }
  std::string_view kind = text;
  int index = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    kind = text.substr(0, colon);
    std::string_view num = text.substr(colon + 1);
    if (num.empty() || num.size() > 4 || num.find_first_not_of("0123456789") != std::string_view::npos)
      throw InvalidArgument(porta::str("[device] bad device index in '", text,
                                "', expected e.g. cpu, cuda:0, hip:0, vulkan:0 or auto"));
    index = std::stoi(std::string(num));
  }
  for (int i = 0; i < kNumDeviceTypes; ++i)
    if (kind == kDeviceTypeNames[i]) {
      if (i == 0 && index != 0)
        throw InvalidArgument(porta::str("[device] there is one cpu device, got '", text, "'"));
      return Device{static_cast<DeviceType>(i), index};
    }
  throw InvalidArgument(porta::str("[device] unknown device '", text,
                            "', expected cpu, cuda:N, hip:N, vulkan:N or auto"));
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
