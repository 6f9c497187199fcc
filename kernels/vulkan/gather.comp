// variants: b32 b16 b64 b8
// Gather along one axis, data viewed as [outer, axis_dim, inner] and the output as
// [outer, num_indices, inner]: dst[o, j, i] = src[o, index[j], i]. Indices arrive validated
// and non-negative (the launcher checks them on the host), as int32.
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : enable

#if defined(PORTA_B64)
#define ELEM uvec2
#elif defined(PORTA_B16)
#define ELEM float16_t
#elif defined(PORTA_B8)
#define ELEM uint8_t
#else
#define ELEM uint
#endif

layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
layout(std430, binding = 2) writeonly buffer Dst { ELEM dst[]; };
layout(push_constant) uniform Params { uint n; uint inner; uint num_indices; uint axis_dim; } p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint in_row = i % p.inner, t = i / p.inner;
  uint j = t % p.num_indices, o = t / p.num_indices;
  dst[i] = src[(o * p.axis_dim + uint(index[j])) * p.inner + in_row];
}
