// variants: f32 f16 u8 i8 i32 i64
// Cast: the variant names the source type (bool reads as u8). DST (specialization constant 1)
// picks the destination: 0 f32, 1 f16, 2 bool, 3 u8, 4 i8, 5 i32, 6 i64. The output tensor is
// bound four times, as 32-, 16-, 8- and 64-bit words, and only DST's binding is written, so
// only the i64 source variant needs 64-bit integer arithmetic. Rules follow ops/cast.cpp:
// to bool is x != 0 (NaN -> true); to a float type rounds to nearest even; float to integer
// truncates, NaN is 0, values beyond the i64 range saturate to its limits and narrower types
// keep the low bits of that i64; integer to narrower integer keeps the low bits.
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require

#if defined(PORTA_I64)
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define SRC int64_t
#elif defined(PORTA_U8)
#define SRC uint8_t
#elif defined(PORTA_I8)
#define SRC int8_t
#elif defined(PORTA_I32)
#define SRC int
#else
#define SRC STORAGE
#endif

layout(constant_id = 1) const int DST = 0;
layout(std430, binding = 0) readonly buffer Src { SRC src[]; };
layout(std430, binding = 1) writeonly buffer Dst32 { uint dst32[]; };
layout(std430, binding = 2) writeonly buffer Dst16 { float16_t dst16[]; };
layout(std430, binding = 3) writeonly buffer Dst8 { uint8_t dst8[]; };
layout(std430, binding = 4) writeonly buffer Dst64 { uvec2 dst64[]; };
layout(push_constant) uniform Params { uint n; } p;

// Stores an integer given as its two's complement 64-bit words (low, high) as DST's type.
void store_integer(uint i, uint lo, uint hi) {
  if (DST == 2) dst8[i] = uint8_t(lo != 0u || hi != 0u ? 1u : 0u);
  else if (DST == 3 || DST == 4) dst8[i] = uint8_t(lo & 0xffu);
  else if (DST == 5) dst32[i] = lo;
  else dst64[i] = uvec2(lo, hi);
}

void store_float(uint i, float v) {
  if (DST == 0) dst32[i] = floatBitsToUint(v);
  else dst16[i] = float16_t(v);
}

#if !defined(PORTA_I64) && !defined(PORTA_U8) && !defined(PORTA_I8) && !defined(PORTA_I32)
// Truncates v to an i64 as (low, high) words without 64-bit arithmetic: |v| < 2^63 splits
// exactly into two 32-bit halves (dividing by 2^32 and flooring are exact in binary floats),
// then negative values take the two's complement.
uvec2 float_to_i64(float v) {
  if (isnan(v)) return uvec2(0u);
  if (v >= 9223372036854775808.0) return uvec2(0xffffffffu, 0x7fffffffu);
  if (v <= -9223372036854775808.0) return uvec2(0u, 0x80000000u);
  float a = trunc(abs(v));
  float high = floor(a * (1.0 / 4294967296.0));
  uint lo = uint(a - high * 4294967296.0), hi = uint(high);
  if (v < 0.0) {
    lo = ~lo + 1u;
    hi = ~hi + (lo == 0u ? 1u : 0u);
  }
  return uvec2(lo, hi);
}
#endif

void main() {
  uint i = global_index();
  if (i >= p.n) return;
#if defined(PORTA_I64)
  int64_t v = src[i];
  if (DST <= 1) store_float(i, float(v));
  else store_integer(i, uint(uint64_t(v) & 0xffffffffUL), uint(uint64_t(v) >> 32));
#elif defined(PORTA_U8) || defined(PORTA_I8) || defined(PORTA_I32)
  int v = int(src[i]);
  if (DST <= 1) store_float(i, float(v));
  else store_integer(i, uint(v), v < 0 ? 0xffffffffu : 0u);
#else
  float v = float(src[i]);
  if (DST <= 1) store_float(i, v);
  else if (DST == 2) dst8[i] = uint8_t(v != 0.0 || isnan(v) ? 1u : 0u);
  else {
    uvec2 w = float_to_i64(v);
    store_integer(i, w.x, w.y);
  }
#endif
}
