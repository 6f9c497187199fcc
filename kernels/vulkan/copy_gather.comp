// variants: b32 b16
// copy.comp four elements at a time for plans whose destination rows are contiguous but whose
// source is not (Transpose moving the innermost axis, a Slice with steps, an Expand of the
// innermost axis; movement.cpp decides; CPU-like devices). Each invocation writes one texel of
// 4 destination elements (uvec4, or uvec2 for 16-bit elements) and gathers its 4 sources from
// a uniform texel buffer of one unsigned element per texel (R32UI / R16UI: raw bits, exactly;
// lavapipe vectorizes texel loads only, and runs a storage-buffer load per lane). The
// innermost axis counts texels (shape[rank - 1] = its elements / 4); the destination's strides
// and base are in texels, the source's in elements. ONE (32-bit elements only): one element per
// invocation instead, for destination rows that are no multiple of 4 (e.g. windows of 7):
// strides in elements, the store through Dst1. Indices through div21 below 2^21 (SMALL).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int SMALL = 0;
layout(constant_id = 2) const int ONE = 0;
layout(binding = 0) uniform usamplerBuffer src;
#if defined(PORTA_B16)
layout(std430, binding = 1) writeonly buffer Dst { uvec2 dst[]; };
#else
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };
#endif
layout(std430, binding = 2) writeonly buffer Dst1 { uint dst1[]; };  // the same tensor (ONE)
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  int src_base;
  uint dst_base;
  uint shape[6];
  int src_stride[6];
  uint src_mod[6];
  uint dst_stride[6];
} p;

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  int last = int(p.rank) - 1;
  uint rest = dv(i, p.shape[last]);
  uint q = i - rest * p.shape[last];  // the texel along the innermost axis
  int s = p.src_base;
  uint d = p.dst_base + q * p.dst_stride[last];  // 1 unless ONE
  for (int k = last - 1; k > 0; --k) {
    uint next = dv(rest, p.shape[k]);
    uint c = rest - next * p.shape[k];
    rest = next;
    s += int(c % p.src_mod[k]) * p.src_stride[k];
    d += c * p.dst_stride[k];
  }
  if (last > 0) {
    s += int(rest % p.src_mod[0]) * p.src_stride[0];
    d += rest * p.dst_stride[0];
  }
  if (ONE != 0) {
    dst1[d] = texelFetch(src, s + int(q % p.src_mod[last]) * p.src_stride[last]).x;
    return;
  }
  uvec4 v;
  for (uint j = 0u; j < 4u; ++j) v[j] = texelFetch(src, s + int((q * 4u + j) % p.src_mod[last]) * p.src_stride[last]).x;
#if defined(PORTA_B16)
  dst[d] = uvec2(v.x | (v.y << 16), v.z | (v.w << 16));
#else
  dst[d] = v;
#endif
}
