// variants: f32 f16
// Y = Act(alpha * A x W^T + beta * C + R) for a few rows of A (at most 16 per image) on CPU-like
// devices (matmul.cpp and conv.cpp, implementation "rows"): a Linear layer at batch 1-8, every
// classifier head, a Conv over a small map (the late stages of CNNs). Such a product reads each
// element of W once, so it is bound by how fast W arrives.
// W comes packed (pack_rows.comp, once per session step). Invocation i owns RB rows of W (4,
// or 8 where the product has 4 rows or more, matmul.cpp); at each texel k of K the RB texels of
// its rows lie side by side, after those of the invocations before it in its block of 8:
//   Wp[((i / 8 * kt + k) * 8 + i % 8) * RB + r]   (texels; r < RB)
// so 8 neighbouring invocations (a SIMD row of lavapipe) read 8 x RB contiguous texels per
// step of k, and a block of 8 x RB rows is one forward stream. Read in place, each lane had its
// own rows K elements apart: many short streams, whose start-up cost bound the product on
// lavapipe (about 0.7 us per 4 rows of 1 KB, and 40-50% of the bandwidth of long rows).
// Every invocation reads the same texels of A. No shared memory, barriers or subgroup ops.
// A_T = 0: A (rows, kt texels) row-major. A_T = 1: A stored (K, lda texels), its columns the
// rows of the product (a Conv's columns, or the X of a 1x1 conv: channels by positions); the
// 4 texels of K rows 4k..4k+3 at texel column q hold rows 4q..4q+3 of the product at K
// elements 4k..4k+3, transposed here. A_SCALAR (with A_T): A bound one element per texel, lda,
// and a_img in elements, so its columns may start anywhere (the X of a 1x1 conv over a
// map whose positions are no multiple of 4); K rows 4k..4k+3 of each product row are then four
// element fetches.
// Grid z: the image. A starts at image * a_img texels. Y (and R) at
//   y_base + image * y_img + m * ym + n * yn   for product row m
// and C at m * scm + n * scn (stride 0 broadcasts). Accumulation in fp32. PRE maps A's
// channels first (see its constant).
// PACKED = 0 (a large W stored (N, K), read in place rather than doubled in device memory; A_T
// = 0): the lanes of a subgroup share each row of W instead, 4 rows at a time, reading
// consecutive texels of it, and subgroupAdd sums their dot products; a workgroup's subgroups
// take consecutive groups of 4 rows.
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int TM = 1;   // rows of the product per image (1..16)
layout(constant_id = 3) const int A_T = 0;
layout(constant_id = 4) const int ACT = 0;
layout(constant_id = 5) const int HAS_RES = 0;
layout(constant_id = 6) const int PACKED = 1;
layout(constant_id = 7) const int RB = 4;  // rows of W per invocation (in place: 4 per subgroup)
layout(constant_id = 8) const int A_SCALAR = 0;
// 1: Y (and R) stored by vectors of 4 rows of the product (TM a multiple of 4, rows = TM,
// ym = 1, scm = 0, and y_base, y_img, yn multiples of 4: a Conv over a map of 4 or 16
// positions). lavapipe runs each storage-buffer access as a loop over the SIMD lanes, so a
// vector store costs about what one element's did.
layout(constant_id = 9) const int VEC_OUT = 0;
// PRE (with A_T; PreActConv, pre_act_conv.cpp): A's K rows are channels, each mapped before the
// product as PRE_ACT(a * S[k] + T[k]) (activation.glsl's kinds); S and T come as vec4 texels
// of 4 channels, one of each per texel of K.
layout(constant_id = 10) const int PRE = 0;
layout(constant_id = 11) const int PRE_ACT = 0;
// SHARE (packed W; the device's subgroup size, every workgroup one whole subgroup): every
// invocation needs the same elements of A per texel of K (TM texels of A; with A_T, 4 x
// ceil(TM / 4) texels, or 4 x TM elements with A_SCALAR), and lavapipe runs each texelFetch as
// a gather over its SIMD lanes, so the lanes fetch distinct ones, SHARE at a time, and pass
// them round with subgroupShuffle. Invocations past the last rows of W then stay to fetch (and
// read the last rows of W) but store nothing.
layout(constant_id = 12) const int SHARE = 0;
layout(binding = 0) uniform samplerBuffer A;
layout(binding = 1) uniform samplerBuffer W;  // packed as above
layout(std430, binding = 2) readonly buffer C { STORAGE c[]; };
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) readonly buffer R { STORAGE res[]; };
layout(std430, binding = 5) writeonly buffer Y4 { STORAGE4 y4[]; };  // Y again (VEC_OUT)
layout(std430, binding = 6) readonly buffer R4 { STORAGE4 res4[]; };  // R again (VEC_OUT and HAS_RES)
layout(binding = 7) uniform samplerBuffer S;  // PRE: the channels' scales (a stand-in without)
layout(binding = 8) uniform samplerBuffer T;  // PRE: their shifts
layout(push_constant) uniform Params {
  uint N;       // rows of W (columns of Y)
  uint kt;      // texels of K
  uint rows;    // rows of the product per image (TM)
  uint lda;     // A_T: texels per row of A
  uint a_img, a_last;  // texels; a_last: A's last texel
  uint y_base, y_img, ym, yn;
  uint scm, scn;
  float alpha, beta;
  float act_alpha, act_beta;
  float pre_alpha, pre_beta;  // PRE_ACT's
} p;

#include "activation.glsl"

// PRE: channels 4k..4k+3 of a value of A mapped by their scales and shifts (s, t).
vec4 pre_map(vec4 a, vec4 s, vec4 t) {
  vec4 v = a * s + t;
  for (int j = 0; j < 4; ++j) v[j] = activation_of(PRE_ACT, v[j], p.pre_alpha, p.pre_beta);
  return v;
}


void store(uint image, uint m, uint n, float sum) {
  uint row = m;
  float v = p.alpha * sum;
  if (HAS_BIAS != 0) v += p.beta * float(c[row * p.scm + n * p.scn]);
  uint at = p.y_base + image * p.y_img + row * p.ym + n * p.yn;
  if (HAS_RES != 0) v += float(res[at]);
  y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
}

// PACKED = 0: rows n0..n0 + 3 of W in place, K split over the subgroup's lanes.
void shared_rows(uint image, uint a0, int rows) {
  uint n0 = (group_index() * gl_NumSubgroups + gl_SubgroupID) * uint(RB);
  if (n0 >= p.N) return;  // the whole subgroup
  uint lanes = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  uint wrow[RB];
  for (int r = 0; r < RB; ++r) wrow[r] = min(n0 + uint(r), p.N - 1u) * p.kt;  // past N: read, not stored
  float acc[TM][RB];
  for (int m = 0; m < TM; ++m)
    for (int r = 0; r < RB; ++r) acc[m][r] = 0.0;
  for (uint k = lane; k < p.kt; k += lanes) {
    vec4 w[RB];
    for (int r = 0; r < RB; ++r) w[r] = texelFetch(W, int(wrow[r] + k));
    for (int m = 0; m < TM; ++m) {
      vec4 a = texelFetch(A, int(min(a0 + uint(min(m, rows - 1)) * p.kt + k, p.a_last)));
      for (int r = 0; r < RB; ++r) acc[m][r] += dot(a, w[r]);
    }
  }
  for (int m = 0; m < TM; ++m)
    for (int r = 0; r < RB; ++r) {
      float sum = subgroupAdd(acc[m][r]);
      if (m < rows && n0 + uint(r) < p.N && subgroupElect()) store(image, uint(m), n0 + uint(r), sum);
    }
}

void main() {
  uint image = gl_WorkGroupID.z;
  uint a0 = image * p.a_img;
  int rows = min(int(p.rows), TM);  // >= 1
  if (PACKED == 0) {
    shared_rows(image, a0, rows);
    return;
  }
  uint inv = global_index();
  uint n0 = inv * uint(RB);
  bool live = n0 < p.N;
  if (SHARE == 0 && !live) return;
  if (!live) {
    inv = (p.N - 1u) / uint(RB);
    n0 = inv * uint(RB);
  }
  uint w0 = (inv / 8u * p.kt * 8u + inv % 8u) * uint(RB);
  // SHARE: the values of A a step of K reads, numbered e: A_SCALAR, element j of product row m
  // at e = 4m + j; A_T, texel q of K row 4k + j at e = j * QT + q; else row m's texel at e = m.
  // This lane fetches e = q * SHARE + lane, at share_at[q] from the step's first.
  const int QT = (TM + 3) / 4, NE = A_SCALAR != 0 ? 4 * TM : A_T != 0 ? 4 * QT : TM;
  const int SHARE1 = SHARE + int(SHARE == 0), NQ = (NE + SHARE1 - 1) / SHARE1;
  uint share_at[NQ];
  if (SHARE != 0)
    for (int q = 0; q < NQ; ++q) {
      uint e = min(uint(q * SHARE) + gl_SubgroupInvocationID, uint(NE - 1));
      share_at[q] = A_SCALAR != 0 ? a0 + uint(min(int(e / 4u), rows - 1)) + (e % 4u) * p.lda
                    : A_T != 0    ? a0 + e / uint(QT) * p.lda + e % uint(QT)
                                  : a0 + uint(min(int(e), rows - 1)) * p.kt;
    }
  float acc[TM][RB];
  for (int m = 0; m < TM; ++m)
    for (int r = 0; r < RB; ++r) acc[m][r] = 0.0;
  for (uint k = 0; k < p.kt; ++k) {
    vec4 w[RB];
    for (int r = 0; r < RB; ++r) w[r] = texelFetch(W, int(w0 + k * uint(8 * RB) + uint(r)));
    vec4 a[TM];
    if (SHARE != 0 && A_SCALAR != 0) {
      float v[NQ];
      for (int q = 0; q < NQ; ++q) v[q] = texelFetch(A, int(min(share_at[q] + 4u * k * p.lda, p.a_last))).x;
      for (int m = 0; m < TM; ++m)
        for (int j = 0; j < 4; ++j) a[m][j] = subgroupShuffle(v[(4 * m + j) / SHARE], uint((4 * m + j) % SHARE));
    } else if (SHARE != 0) {
      uint step = A_T != 0 ? 4u * k * p.lda : k;
      vec4 v[NQ];
      for (int q = 0; q < NQ; ++q) v[q] = texelFetch(A, int(min(share_at[q] + step, p.a_last)));
      if (A_T == 0) {
        for (int m = 0; m < TM; ++m) a[m] = subgroupShuffle(v[m / SHARE], uint(m % SHARE));
      } else {
        for (int q = 0; q < QT; ++q) {
          vec4 t[4];
          for (int j = 0; j < 4; ++j) t[j] = subgroupShuffle(v[(j * QT + q) / SHARE], uint((j * QT + q) % SHARE));
          for (int i = 0; i < 4; ++i)
            if (4 * q + i < TM) a[4 * q + i] = vec4(t[0][i], t[1][i], t[2][i], t[3][i]);
        }
      }
    } else if (A_T == 0) {
      // Rows past the last read it (not stored).
      for (int m = 0; m < TM; ++m) a[m] = texelFetch(A, int(min(a0 + uint(min(m, rows - 1)) * p.kt + k, p.a_last)));
    } else if (A_SCALAR != 0) {
      for (int m = 0; m < TM; ++m) {
        uint col = a0 + uint(min(m, rows - 1)) + 4u * k * p.lda;
        a[m] = vec4(texelFetch(A, int(min(col, p.a_last))).x, texelFetch(A, int(min(col + p.lda, p.a_last))).x,
                    texelFetch(A, int(min(col + 2u * p.lda, p.a_last))).x,
                    texelFetch(A, int(min(col + 3u * p.lda, p.a_last))).x);
      }
    } else {
      for (int q = 0; q < (TM + 3) / 4; ++q) {
        vec4 t[4];
        for (int j = 0; j < 4; ++j) t[j] = texelFetch(A, int(min(a0 + (4u * k + uint(j)) * p.lda + uint(q), p.a_last)));
        for (int i = 0; i < 4; ++i)
          if (4 * q + i < TM) a[4 * q + i] = vec4(t[0][i], t[1][i], t[2][i], t[3][i]);
      }
    }
    if (PRE != 0 && A_T != 0) {
      vec4 s = texelFetch(S, int(k)), t = texelFetch(T, int(k));
      for (int m = 0; m < TM; ++m) a[m] = pre_map(a[m], s, t);
    }
    for (int m = 0; m < TM; ++m)
      for (int r = 0; r < RB; ++r) acc[m][r] += dot(a[m], w[r]);
  }
  if (!live) return;
  if (VEC_OUT != 0) {
    // Every row of the product is stored (rows == TM), 4 of them per vector: a column of W's
    // rows' outputs lies along consecutive elements (ym = 1), its C term one value (scm = 0).
    for (int r = 0; r < RB; ++r) {
      uint n = n0 + uint(r);
      if (n >= p.N) break;
      float bias = HAS_BIAS != 0 ? p.beta * float(c[n * p.scn]) : 0.0;
      uint at4 = (p.y_base + image * p.y_img + n * p.yn) / 4u;
      for (int q = 0; q < TM / 4; ++q) {
        vec4 v = p.alpha * vec4(acc[4 * q][r], acc[4 * q + 1][r], acc[4 * q + 2][r], acc[4 * q + 3][r]) + bias;
        if (HAS_RES != 0) v += vec4(res4[at4 + uint(q)]);
        for (int j = 0; j < 4; ++j) v[j] = fused_activation(v[j], p.act_alpha, p.act_beta);
        y4[at4 + uint(q)] = STORAGE4(v);
      }
    }
    return;
  }
  for (int m = 0; m < TM; ++m) {
    if (m >= rows) break;
    for (int r = 0; r < RB; ++r)
      if (n0 + uint(r) < p.N) store(image, uint(m), n0 + uint(r), acc[m][r]);
  }
}
