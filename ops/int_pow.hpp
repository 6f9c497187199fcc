// porta ops — integer Pow and float -> integer conversion as ONNX's Pow and Cast define them,
// shared by the cpu kernel and the CUDA/HIP kernel (compiled for host and device there), so
// the backends cannot drift apart on overflow, negative exponents or NaN.
#pragma once
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PORTA_HOST_DEVICE __host__ __device__
#else
#define PORTA_HOST_DEVICE
#endif

namespace porta::opdef {

/// base^e by squaring in unsigned arithmetic (wraps on overflow like the integer types do);
/// a negative exponent gives 1 / base^-e truncated: 1 for base 1, +-1 for base -1, else 0.
template <typename C>
PORTA_HOST_DEVICE C int_pow(C base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if (base == -1) return (e % 2 == 0) ? 1 : -1;
    return 0;
  }
  using U = std::make_unsigned_t<C>;
  U r = 1, b = static_cast<U>(base);
  while (e > 0) {
    if (e & 1) r = static_cast<U>(r * b);
    b = static_cast<U>(b * b);
    e >>= 1;
  }
  return static_cast<C>(r);
}

/// Float -> integer as Cast does it: truncate toward zero, NaN -> 0, saturate to the int64
/// range, then wrap to C.
template <typename C>
PORTA_HOST_DEVICE C float_to_int(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return static_cast<C>(INT64_MAX);
  if (v <= -9223372036854775808.0) return static_cast<C>(INT64_MIN);
  return static_cast<C>(static_cast<int64_t>(v));
}

}  // namespace porta::opdef
