// variants: f32
// Conv "winograd" (kernels/vulkan/conv.cpp): the weights' transform of F(2x2, 3x3), made once per
// session step (the weights are constants there). For each output channel o and input channel c
// the 3x3 kernel g becomes U = G g G^T (4x4), with
//   G = [1, 0, 0; 1/2, 1/2, 1/2; 1/2, -1/2, 1/2; 0, 0, 1].
// U is stored as 16 matrices (one per position xi = 4 i + j of the 4x4 tile), each (OC, Cp),
// Cp = C rounded up to a multiple of 4 (zero columns past C): u[(xi * OC + o) * Cp + c], the A
// operand of matmul_texel.comp's 16 batches. Each invocation writes 4 consecutive channels of
// one output channel (16 vec4 stores); W (OC, C, 3, 3) is read as one element per texel.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer W;
layout(std430, binding = 1) writeonly buffer U { vec4 u[]; };
layout(push_constant) uniform Params {
  uint total;  // OC x Cp / 4
  uint C, Cp, OC;
} p;

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint quads = p.Cp / 4;
  uint o = i / quads, c0 = (i - o * quads) * 4;
  // g[r][s]: tap (r, s) of the 4 channels c0 .. c0 + 3 (zero past C).
  vec4 g[3][3];
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s) {
      vec4 v = vec4(0.0);
      for (int e = 0; e < 4; ++e)
        if (c0 + e < p.C) v[e] = texelFetch(W, int(((o * p.C + c0 + e) * 3 + r) * 3 + s)).x;
      g[r][s] = v;
    }
  // t = G g (4x3), then U = t G^T (4x4).
  vec4 t[4][3];
  for (int s = 0; s < 3; ++s) {
    t[0][s] = g[0][s];
    t[1][s] = 0.5 * (g[0][s] + g[1][s] + g[2][s]);
    t[2][s] = 0.5 * (g[0][s] - g[1][s] + g[2][s]);
    t[3][s] = g[2][s];
  }
  for (int r = 0; r < 4; ++r) {
    vec4 row[4];
    row[0] = t[r][0];
    row[1] = 0.5 * (t[r][0] + t[r][1] + t[r][2]);
    row[2] = 0.5 * (t[r][0] - t[r][1] + t[r][2]);
    row[3] = t[r][2];
    for (int s = 0; s < 4; ++s) u[((r * 4 + s) * p.OC + o) * quads + c0 / 4] = row[s];
  }
}
