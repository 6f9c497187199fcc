// porta — element types.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace porta {

/// Element type of a tensor.
enum class DType : uint8_t { f32, f16, bf16, f64, i64, i32, i8, u8, boolean };

inline constexpr int kNumDTypes = 9;

/// Bytes per element.
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: case DType::i64: return 8;
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::i8: case DType::u8: case DType::boolean: return 1;
  }
  return 0;
}

/// Short name: "f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool".
std::string_view dtype_name(DType t);
/// Inverse of dtype_name; throws DTypeError listing the accepted names.
DType dtype_from_name(std::string_view name);

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}
constexpr bool is_integer(DType t) {
  return t == DType::i64 || t == DType::i32 || t == DType::i8 || t == DType::u8;
}

/// Bit mask of dtypes, used by kernels to say what they accept.
using DTypeSet = uint32_t;
constexpr DTypeSet dtype_bit(DType t) { return 1u << static_cast<unsigned>(t); }
constexpr bool dtype_in(DTypeSet set, DType t) { return (set & dtype_bit(t)) != 0; }
std::string dtype_set_names(DTypeSet set);

/// IEEE half and bfloat16 conversions (round to nearest even).
uint16_t f32_to_f16(float v);
float f16_to_f32(uint16_t v);
uint16_t f32_to_bf16(float v);
float bf16_to_f32(uint16_t v);

}  // namespace porta
