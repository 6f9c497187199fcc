// variants: f32 f16
// W (N x K, or K x N when B_T = 0) in the layout matmul_rows.comp streams: texel
//   ((blk * kt + k) * 8 + lane) * RB + r   holds W[n][4k .. 4k + 3],  n = (blk * 8 + lane) * RB + r,
// zero where n >= N or past K. One invocation per texel of the slice [first, first + total),
// written at dst[texel - first] (matmul.cpp binds the slice's window, so W may be larger than
// one binding). W is read one element per texel (R32F / R16F).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int B_T = 1;  // W stored (N, K); 0: (K, N)
layout(constant_id = 2) const int RB = 4;   // rows of W per invocation of matmul_rows.comp
layout(binding = 0) uniform samplerBuffer src;
layout(std430, binding = 1) writeonly buffer Dst { STORAGE4 dst[]; };
layout(push_constant) uniform Params {
  uint total, first;
  uint N, K, kt;
} p;

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint t = p.first + i;
  uint rb = uint(RB), r = t % rb, lane = t / rb % 8u, rest = t / (8u * rb);
  uint k = rest % p.kt, blk = rest / p.kt;
  uint n = (blk * 8u + lane) * rb + r;
  vec4 v = vec4(0.0);
  if (n < p.N)
    for (int j = 0; j < 4; ++j) {
      uint kk = 4u * k + uint(j);
      if (kk < p.K) v[j] = texelFetch(src, int(B_T != 0 ? n * p.K + kk : kk * p.N + n)).x;
    }
  dst[i] = STORAGE4(v);
}
