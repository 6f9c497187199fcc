// variants: f32 f16
// Y = alpha * A x B^T + beta * C for a few rows of A (M <= 4) and B stored (N, K): a Linear
// layer at batch 1..4, every classifier head (Gemm transB = 1; matmul.cpp, implementation
// "rows"). Such a product streams B once and is bound by memory. matmul_texel.comp gives each
// invocation its own rows of B, so the SIMD lanes of lavapipe gather from 8 rows K elements
// apart per fetch (8-13 GB/s on a 151 MB weight); here the lanes of one subgroup share a row
// and read consecutive texels of it (one contiguous 16 x subgroup-size byte gather), and
// subgroupAdd sums their partial dot products: no shared memory, no barriers.
// A and B are read as vec4 texels (K a multiple of 4: matmul.cpp pads B once when not).
// A workgroup owns rows [group * rows_per_group, ... + rows_per_group) of Y's columns and its
// subgroups walk them, so every row is covered whatever subgroup size the driver picks.
// C is read at c[m*scm + n*scn] (stride 0 broadcasts). Accumulation in fp32.
// A_T: A stored (K, M) with M = 4 (a pointwise Conv's X over a map of 4 pixels, channel-major):
// its 4 rows' elements at one k are one texel, so a K texel of all 4 rows is 4 texels; Y_T: Y
// stored (N, M) (that Conv's output channels by pixels). HAS_RES: a residual indexed as Y (a Conv's folded Add).
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "common.glsl"

layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int TM = 1;  // rows of A (1..4)
layout(constant_id = 3) const int ACT = 0;
layout(constant_id = 4) const int HAS_RES = 0;
layout(constant_id = 5) const int RB = 4;       // rows of B per subgroup pass
layout(constant_id = 6) const int A_T = 0;
layout(constant_id = 7) const int Y_T = 0;
layout(binding = 0) uniform samplerBuffer A;
layout(binding = 1) uniform samplerBuffer B;
layout(std430, binding = 2) readonly buffer C { STORAGE c[]; };
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) readonly buffer R { STORAGE res[]; };
layout(push_constant) uniform Params {
  uint N;
  uint kt;  // texels per row of A and B (K / 4)
  uint rows_per_group;
  uint scm, scn;
  float alpha, beta;
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

void main() {
  uint first = group_index() * p.rows_per_group;
  uint last = min(first + p.rows_per_group, p.N);
  uint lanes = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  // Each subgroup takes RB consecutive rows of B at a time: the A texels fetched serve all.
  for (uint n0 = first + gl_SubgroupID * RB; n0 < last; n0 += gl_NumSubgroups * RB) {
    uint brow[RB];
    for (int r = 0; r < RB; ++r) brow[r] = min(n0 + uint(r), p.N - 1) * p.kt;  // past N: a valid row, not stored
    vec4 acc[TM][RB];
    for (int i = 0; i < TM; ++i)
      for (int r = 0; r < RB; ++r) acc[i][r] = vec4(0.0);
    for (uint k = lane; k < p.kt; k += lanes) {
      vec4 b[RB];
      for (int r = 0; r < RB; ++r) b[r] = texelFetch(B, int(brow[r] + k));
      vec4 at[4];
      if (A_T != 0)
        for (int j = 0; j < 4; ++j) at[j] = texelFetch(A, int(4u * k + uint(j)));
      for (int i = 0; i < TM; ++i) {
        vec4 a = A_T != 0 ? vec4(at[0][i], at[1][i], at[2][i], at[3][i]) : texelFetch(A, int(uint(i) * p.kt + k));
        for (int r = 0; r < RB; ++r) acc[i][r] += a * b[r];
      }
    }
    for (int i = 0; i < TM; ++i)
      for (int r = 0; r < RB; ++r) {
        uint n = n0 + uint(r);
        float v = p.alpha * subgroupAdd(acc[i][r].x + acc[i][r].y + acc[i][r].z + acc[i][r].w);
        if (n < last && subgroupElect()) {
          if (HAS_BIAS != 0) v += p.beta * float(c[uint(i) * p.scm + n * p.scn]);
          uint at = Y_T != 0 ? n * uint(TM) + uint(i) : uint(i) * p.N + n;
          if (HAS_RES != 0) v += float(res[at]);
          y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
        }
      }
  }
}
