// variants: f32 f16
// Cast between f32 and f16: the variant names the source type, the destination is the other.
// Conversion rounds to nearest even (the device's float-to-half conversion).
#version 450
#include "common.glsl"

#ifdef PORTA_F16
#define DST float
#else
#define DST float16_t
#endif

layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) writeonly buffer Dst { DST dst[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  dst[i] = DST(float(src[i]));
}
