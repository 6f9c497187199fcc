// variants: b32 b16
// gather.comp four elements at a time on CPU-like devices (gather.cpp, implementation
// "texel"), for rows of `inner` elements that are a multiple of 4: data viewed as [outer,
// axis_dim, inner] and the output as [outer, num_indices, inner], units here texels of 4
// elements. The data is a uniform texel buffer of unsigned integers (RGBA32UI / RGBA16UI: raw
// bits, exactly; lavapipe vectorizes texel loads only); indices arrive validated and
// non-negative, as int32. Indices through div21 below 2^21 (SMALL).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int SMALL = 0;
layout(binding = 0) uniform usamplerBuffer src;
layout(std430, binding = 1) readonly buffer Index { int index[]; };
#if defined(PORTA_B16)
layout(std430, binding = 2) writeonly buffer Dst { uvec2 dst[]; };
#else
layout(std430, binding = 2) writeonly buffer Dst { uvec4 dst[]; };
#endif
layout(push_constant) uniform Params { uint n; uint inner4; uint num_indices; uint axis_dim; } p;

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint t = dv(i, p.inner4), in_row = i - t * p.inner4;
  uint o = dv(t, p.num_indices), j = t - o * p.num_indices;
  uvec4 v = texelFetch(src, int((o * p.axis_dim + uint(index[j])) * p.inner4 + in_row));
#if defined(PORTA_B16)
  dst[i] = uvec2(v.x | (v.y << 16), v.z | (v.w << 16));
#else
  dst[i] = v;
#endif
}
