// variants: b32 b16
// Concat on CPU-like devices (concat_split.cpp, implementation "texel"): up to 8 inputs in one
// dispatch, 4 elements per invocation. Along the output's rows (outer index x the concatenated
// axis and everything inside it) the inputs this dispatch covers lie side by side; each part's
// share of a row is a multiple of 4 elements, so a texel never straddles two inputs. Inputs are
// uniform texel buffers of unsigned integers (RGBA32UI / RGBA16UI: raw bits, exactly; lavapipe
// vectorizes texel loads only); each invocation stores one texel's bits.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int SMALL = 0;  // every index below 2^21: div21 for '/'
layout(binding = 0) uniform usamplerBuffer src0;
layout(binding = 1) uniform usamplerBuffer src1;
layout(binding = 2) uniform usamplerBuffer src2;
layout(binding = 3) uniform usamplerBuffer src3;
layout(binding = 4) uniform usamplerBuffer src4;
layout(binding = 5) uniform usamplerBuffer src5;
layout(binding = 6) uniform usamplerBuffer src6;
layout(binding = 7) uniform usamplerBuffer src7;
#if defined(PORTA_B16)
layout(std430, binding = 8) writeonly buffer Dst { uvec2 dst[]; };
#else
layout(std430, binding = 8) writeonly buffer Dst { uvec4 dst[]; };
#endif
layout(push_constant) uniform Params {
  uint n;            // texels this dispatch writes
  uint group_quads;  // texels of one output row that its parts cover
  uint row_quads;    // texels of one output row
  uint first_quad;   // where in a row the first of its parts starts
  uint ends[8];      // per part: the end of its texels within the group's share of a row
  uint part_quads[8];  // per part: its input's texels per row
} p;

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint outer = dv(i, p.group_quads), r = i - outer * p.group_quads;
  uint k = 0u, start = 0u;
  while (k < 7u && r >= p.ends[k]) start = p.ends[k++];
  int at = int(outer * p.part_quads[k] + (r - start));
  uvec4 v;
  switch (k) {
    case 0u: v = texelFetch(src0, at); break;
    case 1u: v = texelFetch(src1, at); break;
    case 2u: v = texelFetch(src2, at); break;
    case 3u: v = texelFetch(src3, at); break;
    case 4u: v = texelFetch(src4, at); break;
    case 5u: v = texelFetch(src5, at); break;
    case 6u: v = texelFetch(src6, at); break;
    default: v = texelFetch(src7, at); break;
  }
  uint d = outer * p.row_quads + p.first_quad + r;
#if defined(PORTA_B16)
  dst[d] = uvec2(v.x | (v.y << 16), v.z | (v.w << 16));
#else
  dst[d] = v;
#endif
}
