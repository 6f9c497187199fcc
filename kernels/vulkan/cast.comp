// variants: f32 f16 u8 i8 i32
// Cast: the variant names the source type (bool reads as u8 0/1); DST (specialization
// constant 1) picks the destination: 0 f32, 1 f16, 2 bool. The output tensor is bound three
// times with those element types and only DST's binding is written. Rules follow the op:
// to bool is x != 0 (NaN -> true); to a float type rounds to nearest even.
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require

#if defined(PORTA_U8)
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
layout(std430, binding = 1) writeonly buffer Dst32 { float dst32[]; };
layout(std430, binding = 2) writeonly buffer Dst16 { float16_t dst16[]; };
layout(std430, binding = 3) writeonly buffer Dst8 { uint8_t dst8[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
#if defined(PORTA_U8) || defined(PORTA_I8) || defined(PORTA_I32)
  int v = int(src[i]);
  if (DST == 0) dst32[i] = float(v);
  else if (DST == 1) dst16[i] = float16_t(float(v));
  else dst8[i] = uint8_t(v != 0 ? 1u : 0u);
#else
  float v = float(src[i]);
  if (DST == 0) dst32[i] = v;
  else if (DST == 1) dst16[i] = float16_t(v);
  else dst8[i] = uint8_t(v != 0.0 || isnan(v) ? 1u : 0u);
#endif
}
