// variants: b32 b16 b64 b8
// Fills dst[0..n) with one value given as raw bits (low word first), for ConstantOfShape and
// the border of constant-mode Pad.
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : enable

#if defined(PORTA_B64)
#define ELEM uvec2
#elif defined(PORTA_B16)
#define ELEM uint16_t
#elif defined(PORTA_B8)
#define ELEM uint8_t
#else
#define ELEM uint
#endif

layout(std430, binding = 0) writeonly buffer Dst { ELEM dst[]; };
layout(push_constant) uniform Params { uint n; uint lo; uint hi; } p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
#if defined(PORTA_B64)
  dst[i] = uvec2(p.lo, p.hi);
#else
  dst[i] = ELEM(p.lo);
#endif
}
