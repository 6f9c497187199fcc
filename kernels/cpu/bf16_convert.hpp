// f32 <-> bf16 over arrays, as porta::f32_to_bf16 / bf16_to_f32 do it (round to nearest even,
// a NaN stays a quiet NaN), inline so the compiler vectorizes the loops: per-element calls to
// the out-of-line conversion cost more than the bf16 products they feed.
#pragma once
#include <cstdint>
#include <cstring>

namespace porta::cpu {

inline void f32_to_bf16_n(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, x + i, sizeof v);
    const uint32_t rounded = (v + 0x7fffu + ((v >> 16) & 1u)) >> 16;
    y[i] = static_cast<uint16_t>((v & 0x7fffffffu) > 0x7f800000u ? (v >> 16) | 0x40u : rounded);
  }
}

inline void bf16_to_f32_n(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t v = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(y + i, &v, sizeof v);
  }
}

}  // namespace porta::cpu
