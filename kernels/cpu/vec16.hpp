// porta cpu kernels — Vec16: 16 floats as one value (one zmm register with AVX-512, split by
// the compiler into narrower ones otherwise), for loops that keep accumulators in registers
// across a reduction (an array accumulator round-trips through memory: store forwarding made
// such loops slower than oneDNN).
#pragma once
#include <cstring>

// A 64-byte vector passed by value has an AVX-512-dependent ABI. These helpers take vectors by
// reference and are inlined into each PORTA_CPU_CLONES clone, so GCC's -Wpsabi note about
// passing one out of line on a target without AVX-512 does not apply; clang refuses such a
// by-value vector outright in the non-AVX-512 clones.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace porta::cpu {

typedef float Vec16 __attribute__((vector_size(64)));

inline void load16(Vec16& v, const float* p) { std::memcpy(&v, p, sizeof v); }
inline void store16(float* p, const Vec16& v) { std::memcpy(p, &v, sizeof v); }

/// The sum of v's 16 lanes.
inline float sum16(const Vec16& v) {
  float s = 0.0f;
  for (int j = 0; j < 16; ++j) s += v[j];
  return s;
}

}  // namespace porta::cpu
