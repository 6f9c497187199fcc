// RotaryEmbedding (ai.porta): one invocation per rotated pair of X [B, H, S, D], read at
// strides per (b, h, s) (elements; D dense), so X may be a strided view of a wider tensor (a
// head split of a packed q/k/v projection, read where it lies); Y is contiguous.
// Pair i of position s is (X[.., i], X[.., i + D/2]) or, with INTERLEAVED (specialization
// constant 1), (X[.., 2i], X[.., 2i + 1]); both are rotated by the angle whose cos and sin are
// Cos[s, i] and Sin[s, i].
#version 450
#include "common.glsl"

layout(constant_id = 1) const int INTERLEAVED = 0;
layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) readonly buffer Cos { STORAGE cos_table[]; };
layout(std430, binding = 2) readonly buffer Sin { STORAGE sin_table[]; };
layout(std430, binding = 3) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params {
  uint pairs;
  uint S, half_d, H;
  uint x_stride[3];  // elements per b, h and s of X
} p;

void main() {
  uint k = global_index();
  if (k >= p.pairs) return;
  uint i = k % p.half_d, row_pos = k / p.half_d;  // row_pos = row * S + s
  uint s = row_pos % p.S, row = row_pos / p.S;
  uint base = row_pos * 2u * p.half_d;
  uint first = INTERLEAVED != 0 ? 2u * i : i, second = INTERLEAVED != 0 ? first + 1u : first + p.half_d;
  uint a = base + first, b = base + second;
  uint from = (row / p.H) * p.x_stride[0] + (row % p.H) * p.x_stride[1] + s * p.x_stride[2];
  float c = float(cos_table[s * p.half_d + i]), sn = float(sin_table[s * p.half_d + i]);
  float xa = float(src[from + first]), xb = float(src[from + second]);
  dst[a] = STORAGE(xa * c - xb * sn);
  dst[b] = STORAGE(xb * c + xa * sn);
}
