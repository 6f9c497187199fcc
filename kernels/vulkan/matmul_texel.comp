// variants: f32 f16
// Batched GEMM for CPU-like devices (lavapipe): no shared memory and no barriers. Each
// invocation owns a TM x 8 block of Y (TM up to 32, matmul.cpp chooses) and walks K four at a
// time, reading A and B through uniform texel buffers (vec4 texels, matmul.cpp binds them with
// vk::texels): on llvmpipe a texelFetch is one vectorized gather, while every storage-buffer
// load is a scalar loop over the SIMD lanes. TM + 8 fetches feed 32 x TM multiply-adds per
// step, accumulated in fp32.
//   Y[b] = alpha * A[b] x B[b] + beta * C   (C only when HAS_BIAS)
// A is (M, K) row-major; B is (K, N) row-major, or (N, K) when B_T (Gemm transB, Linear
// weights). K is a multiple of 4, so is N when B is (K, N): every texel lies inside one row.
// Per-batch element offsets of A, B (multiples of 4), C and Y come from `offsets` (four per
// batch); z is the batch. C is read at c[c_off + m*scm + n*scn]
// (stride 0 broadcasts). B (K, N) rows are ldb texels apart (>= N / 4: Conv's im2col pads them).
// Conv's fused epilogue (activation.glsl): Y = Act(alpha * A x B + beta * C + R), R indexed as Y
// (HAS_RES; the residual Add folded into the Conv), Act the folded activation (ACT).
// With VEC (N and every batch's Y offset multiples of 4) Y, and R, are also bound as vec4
// arrays and a row's 8 results leave as two vec4 stores: lavapipe runs every storage-buffer
// access as a scalar loop over the SIMD lanes, so 4 elements per access instead of 1 (1x1
// convs over small maps are bound by these stores, not by their multiply-adds). A C constant
// along a row (a Conv's bias per output channel) is read once per row.
// With B_SCALAR, B (K, N) is bound one element per texel (R32F / R16F) and its rows are ldb
// elements apart from any element offset: a pointwise Conv over a map whose positions are no
// multiple of 4 (7x7, 15x15) reads X in place instead of through a padded copy of its columns.
// Each step then fetches B's 8 columns of 4 rows element by element (32 fetches, not 8).
// With GLU (GatedLinear, gated_linear.cpp) B's columns come in pairs, gate and up of one output
// (its weights interleaved), and Y has N / 2 columns: Y[m, j] = Act(gate) * up, each with its
// C term; an invocation's 8 columns make 4 outputs (one vec4 store with VEC). No residual.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int B_T = 0;
layout(constant_id = 3) const int ACT = 0;
layout(constant_id = 4) const int HAS_RES = 0;
layout(constant_id = 5) const int TM = 4;  // rows of Y per invocation (up to 32: matmul.cpp's texel_tiling)
layout(constant_id = 6) const int VEC = 0;
layout(constant_id = 7) const int B_SCALAR = 0;
layout(constant_id = 8) const int GLU = 0;
// RMS (RmsNormMatMul, rms_norm_matmul.cpp; GatedLinear with rms_epsilon): each row of A is
// also an RMS norm's input; the invocation sums the squares of the A texels it fetches anyway
// and scales its sums by 1 / sqrt(mean + rms_eps) before C, the residual, the activation and
// the gating (the norm's scale is folded into B by then). B (K, N) only.
layout(constant_id = 9) const int RMS = 0;
// PRE (PreActConv, pre_act_conv.cpp): B (K, N) is a pointwise conv's X, its K rows channels,
// each mapped before the product as PRE_ACT(b * S[k] + T[k]) (activation.glsl's kinds); S and
// T come as vec4 texels of 4 channels, one of each per step of K.
layout(constant_id = 10) const int PRE = 0;
layout(constant_id = 11) const int PRE_ACT = 0;
layout(binding = 0) uniform samplerBuffer A;
layout(binding = 1) uniform samplerBuffer B;
layout(std430, binding = 2) readonly buffer C { STORAGE c[]; };
layout(std430, binding = 3) readonly buffer Offsets { int offsets[]; };
layout(std430, binding = 4) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 5) readonly buffer R { STORAGE res[]; };
layout(std430, binding = 6) writeonly buffer Y4 { STORAGE4 y4[]; };  // Y again (VEC)
layout(std430, binding = 7) readonly buffer R4 { STORAGE4 res4[]; };  // R again (VEC and HAS_RES)
layout(binding = 8) uniform samplerBuffer S;  // PRE: the channels' scales (a stand-in without)
layout(binding = 9) uniform samplerBuffer T;  // PRE: their shifts
layout(push_constant) uniform Params {
  uint M, N, K;
  uint tiles_n;  // ceil(N / 8)
  uint ldb;      // texels per row of B when it is (K, N)
  uint scm, scn;
  float alpha, beta;
  float act_alpha, act_beta;
  float rms_eps;
  float pre_alpha, pre_beta;  // PRE_ACT's
} p;

#include "activation.glsl"

// PRE: the 4 rows of B's step k (channels 4k..4k+3), 8 columns each (b0, b1), mapped by their
// channels' scales and shifts.
void pre_map(uint k, inout vec4 b0[4], inout vec4 b1[4]) {
  vec4 s = texelFetch(S, int(k)), t = texelFetch(T, int(k));
  for (int j = 0; j < 4; ++j) {
    b0[j] = b0[j] * s[j] + t[j];
    b1[j] = b1[j] * s[j] + t[j];
    for (int i = 0; i < 4; ++i) {
      b0[j][i] = activation_of(PRE_ACT, b0[j][i], p.pre_alpha, p.pre_beta);
      b1[j][i] = activation_of(PRE_ACT, b1[j][i], p.pre_alpha, p.pre_beta);
    }
  }
}

void main() {
  uint tile = global_index();
  if (tile >= p.tiles_n * ((p.M + TM - 1) / TM)) return;
  uint batch = gl_WorkGroupID.z;
  uint m0 = tile / p.tiles_n * TM, n0 = tile % p.tiles_n * 8;
  uint a_off = uint(offsets[4 * batch]) / 4, b_off = uint(offsets[4 * batch + 1]) / (B_SCALAR != 0 ? 1 : 4);
  uint c_off = uint(offsets[4 * batch + 2]), y_base = uint(offsets[4 * batch + 3]);
  uint kt = p.K / 4;  // texels per row of A (and of B when B_T)
  // Rows and columns past the edge read the last valid one; their results are not stored.
  uint arow[TM];
  for (int i = 0; i < TM; ++i) arow[i] = a_off + min(m0 + i, p.M - 1) * kt;
  vec4 acc[TM][2];
  for (int i = 0; i < TM; ++i) acc[i][0] = acc[i][1] = vec4(0.0);
  float ss[TM];  // RMS: the rows' sums of squares
  for (int i = 0; i < TM; ++i) ss[i] = 0.0;
  if (B_SCALAR != 0) {
    // Columns past the edge read the last valid one (their results are not stored).
    uint col[8];
    for (int j = 0; j < 8; ++j) col[j] = b_off + min(n0 + j, p.N - 1);
    for (uint k = 0; k < kt; ++k) {
      vec4 a[TM];
      for (int i = 0; i < TM; ++i) a[i] = texelFetch(A, int(arow[i] + k));
      vec4 b0[4], b1[4];
      for (int j = 0; j < 4; ++j) {
        uint row = (4 * k + j) * p.ldb;
        b0[j] = vec4(texelFetch(B, int(row + col[0])).x, texelFetch(B, int(row + col[1])).x,
                     texelFetch(B, int(row + col[2])).x, texelFetch(B, int(row + col[3])).x);
        b1[j] = vec4(texelFetch(B, int(row + col[4])).x, texelFetch(B, int(row + col[5])).x,
                     texelFetch(B, int(row + col[6])).x, texelFetch(B, int(row + col[7])).x);
      }
      if (PRE != 0) pre_map(k, b0, b1);
      for (int i = 0; i < TM; ++i) {
        acc[i][0] += a[i].x * b0[0] + a[i].y * b0[1] + a[i].z * b0[2] + a[i].w * b0[3];
        acc[i][1] += a[i].x * b1[0] + a[i].y * b1[1] + a[i].z * b1[2] + a[i].w * b1[3];
      }
    }
  } else if (B_T == 0) {
    uint nt = p.ldb;
    uint col0 = b_off + min(n0 / 4, nt - 1), col1 = b_off + min(n0 / 4 + 1, nt - 1);
    for (uint k = 0; k < kt; ++k) {
      vec4 a[TM];
      for (int i = 0; i < TM; ++i) a[i] = texelFetch(A, int(arow[i] + k));
      if (RMS != 0)
        for (int i = 0; i < TM; ++i) ss[i] += dot(a[i], a[i]);
      vec4 b0[4], b1[4];
      for (int j = 0; j < 4; ++j) {
        uint row = (4 * k + j) * nt;
        b0[j] = texelFetch(B, int(row + col0));
        b1[j] = texelFetch(B, int(row + col1));
      }
      if (PRE != 0) pre_map(k, b0, b1);
      for (int i = 0; i < TM; ++i) {
        acc[i][0] += a[i].x * b0[0] + a[i].y * b0[1] + a[i].z * b0[2] + a[i].w * b0[3];
        acc[i][1] += a[i].x * b1[0] + a[i].y * b1[1] + a[i].z * b1[2] + a[i].w * b1[3];
      }
    }
  } else {
    uint brow[8];
    for (int j = 0; j < 8; ++j) brow[j] = b_off + min(n0 + j, p.N - 1) * kt;
    for (uint k = 0; k < kt; ++k) {
      vec4 a[TM], b[8];
      for (int i = 0; i < TM; ++i) a[i] = texelFetch(A, int(arow[i] + k));
      for (int j = 0; j < 8; ++j) b[j] = texelFetch(B, int(brow[j] + k));
      for (int i = 0; i < TM; ++i) {
        acc[i][0] += vec4(dot(a[i], b[0]), dot(a[i], b[1]), dot(a[i], b[2]), dot(a[i], b[3]));
        acc[i][1] += vec4(dot(a[i], b[4]), dot(a[i], b[5]), dot(a[i], b[6]), dot(a[i], b[7]));
      }
    }
  }
  if (RMS != 0)
    for (int i = 0; i < TM; ++i) {
      float scale = inversesqrt(ss[i] / float(p.K) + p.rms_eps);
      acc[i][0] *= scale;
      acc[i][1] *= scale;
    }
  if (GLU != 0) {
    uint no = p.N / 2u, j0 = n0 / 2u;  // Y's columns, the invocation's first
    for (int i = 0; i < TM; ++i) {
      uint m = m0 + i;
      if (m >= p.M) break;
      vec4 o;
      for (int q = 0; q < 4; ++q) {
        uint n = n0 + uint(2 * q);
        float g = p.alpha * acc[i][q / 2][(q % 2) * 2], u = p.alpha * acc[i][q / 2][(q % 2) * 2 + 1];
        if (HAS_BIAS != 0 && n < p.N) {
          g += p.beta * float(c[c_off + m * p.scm + n * p.scn]);
          u += p.beta * float(c[c_off + m * p.scm + (n + 1u) * p.scn]);
        }
        o[q] = fused_activation(g, p.act_alpha, p.act_beta) * u;
      }
      uint at = y_base + m * no + j0;
      if (VEC != 0) {
        y4[at / 4] = STORAGE4(o);
      } else {
        for (int q = 0; q < 4; ++q)
          if (j0 + uint(q) < no) y[at + uint(q)] = STORAGE(o[q]);
      }
    }
    return;
  }
  for (int i = 0; i < TM; ++i) {
    uint m = m0 + i;
    if (m >= p.M) break;
    float row_c = 0.0;  // C constant along the row (scn = 0), read once
    if (HAS_BIAS != 0 && p.scn == 0u) row_c = p.beta * float(c[c_off + m * p.scm]);
    if (VEC != 0) {
      for (int h = 0; h < 2; ++h) {
        uint n = n0 + 4 * h;
        if (n >= p.N) break;
        vec4 v = p.alpha * acc[i][h];
        if (HAS_BIAS != 0) {
          if (p.scn == 0u) v += row_c;
          else
            for (int j = 0; j < 4; ++j) v[j] += p.beta * float(c[c_off + m * p.scm + (n + j) * p.scn]);
        }
        uint at4 = (y_base + m * p.N + n) / 4;
        if (HAS_RES != 0) v += vec4(res4[at4]);
        for (int j = 0; j < 4; ++j) v[j] = fused_activation(v[j], p.act_alpha, p.act_beta);
        y4[at4] = STORAGE4(v);
      }
      continue;
    }
    for (int j = 0; j < 8; ++j) {
      uint n = n0 + j;
      if (n >= p.N) break;
      float v = p.alpha * acc[i][j / 4][j % 4];
      if (HAS_BIAS != 0) v += p.scn == 0u ? row_c : p.beta * float(c[c_off + m * p.scm + n * p.scn]);
      uint at = y_base + m * p.N + n;
      if (HAS_RES != 0) v += float(res[at]);
      y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
    }
  }
}
