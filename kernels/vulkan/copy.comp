// variants: b32 b16 b64 b8
// Strided copy for data-movement ops (Transpose, Slice, Concat, Split, Expand, Tile, Pad...):
// iterates over `shape`; element c (a coordinate) goes from
//   src[src_base + sum_d (c_d % src_mod_d) * src_stride_d]  to  dst[dst_base + sum_d c_d * dst_stride_d].
// Elements are moved as raw bits, so one variant per element size serves every dtype.
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
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
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
  dst[d] = src[s];
}
