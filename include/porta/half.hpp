// porta — f16/bf16 storage types and a dtype visitor for host code.
#pragma once
#include <cstdint>
#include <cstring>

#include "porta/dtype.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta {

/// IEEE binary16 storage; arithmetic happens in float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float v) : bits(f32_to_f16(v)) {}
  operator float() const { return f16_to_f32(bits); }
};
/// bfloat16 storage; arithmetic happens in float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float v) : bits(f32_to_bf16(v)) {}
  operator float() const { return bf16_to_f32(bits); }
};

template <DType> struct dtype_traits;
template <> struct dtype_traits<DType::f32> { using type = float; };
template <> struct dtype_traits<DType::f64> { using type = double; };
template <> struct dtype_traits<DType::f16> { using type = Half; };
template <> struct dtype_traits<DType::bf16> { using type = BFloat16; };
template <> struct dtype_traits<DType::i64> { using type = int64_t; };
template <> struct dtype_traits<DType::i32> { using type = int32_t; };
template <> struct dtype_traits<DType::i8> { using type = int8_t; };
template <> struct dtype_traits<DType::u8> { using type = uint8_t; };
template <> struct dtype_traits<DType::boolean> { using type = bool; };

/// Calls f(T{}) with T the C++ type of `t`: visit_dtype(t, [&](auto tag) { using T = decltype(tag); ... }).
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::f16: return f(Half{});
    case DType::bf16: return f(BFloat16{});
    case DType::i64: return f(int64_t{});
    case DType::i32: return f(int32_t{});
    case DType::i8: return f(int8_t{});
    case DType::u8: return f(uint8_t{});
    case DType::boolean: return f(bool{});
  }
  throw DTypeError(str("[dtype] unknown dtype code ", static_cast<int>(t)));
}

/// Converts a double to T with C++ semantics (ints truncate toward zero, bool: != 0).
template <typename T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, bool>) return v != 0.0;
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}
template <typename T>
inline double to_double(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(v);
  else return static_cast<double>(v);
}

}  // namespace porta
