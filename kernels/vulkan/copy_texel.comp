// variants: b32 b16
// copy.comp four elements at a time, for plans whose innermost axis is contiguous on both sides
// and every other stride and both bases are multiples of 4 (movement.cpp decides; CPU-like
// devices): units here are texels of 4 elements. The source is a uniform texel buffer of
// unsigned integers (RGBA32UI / RGBA16UI: raw bits, exactly; lavapipe vectorizes texel loads
// only) and each invocation stores one texel's bits (uvec4, or uvec2 for 16-bit elements).
#version 450
#include "common.glsl"

layout(binding = 0) uniform usamplerBuffer src;
#if defined(PORTA_B16)
layout(std430, binding = 1) writeonly buffer Dst { uvec2 dst[]; };
#else
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };
#endif
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

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  int s = p.src_base;
  uint d = p.dst_base, rest = i;
  for (int k = int(p.rank) - 1; k > 0; --k) {
    uint c = rest % p.shape[k];
    rest /= p.shape[k];
    s += int(c % p.src_mod[k]) * p.src_stride[k];
    d += c * p.dst_stride[k];
  }
  s += int(rest % p.src_mod[0]) * p.src_stride[0];
  d += rest * p.dst_stride[0];
  uvec4 v = texelFetch(src, s);
#if defined(PORTA_B16)
  dst[d] = uvec2(v.x | (v.y << 16), v.z | (v.w << 16));
#else
  dst[d] = v;
#endif
}
