// variants: f32 f16
// Batched GEMM, shared-memory tiled with a 4x4 register micro-tile per invocation:
//   Y[b] = alpha * A[b] x B[b] + beta * C   (C only when HAS_BIAS)
// A element (m, k) is a[a_off + m*sam + k*sak], B element (k, n) is b[b_off + k*sbk + n*sbn]
// (strides express transposes); per-batch offsets come from `offsets` (a_off, b_off pairs).
// C is read at c[m*scm + n*scn] (stride 0 broadcasts). Accumulation is fp32 in every variant.
// Workgroup: 256 invocations computing a 64x64 tile of Y; z indexes the batch.
// One dispatch sums k in [k_begin, K) (K here is the end of this dispatch's slice of the inner
// dimension): the host splits a long inner dimension over several dispatches when one would
// loop more often per invocation than the driver allows (matmul.cpp). `pass` bit 1 adds the
// fp32 partial sums of earlier dispatches (Partial, indexed like Y); bit 2 stores the sums there
// instead of writing Y (every dispatch but the last). alpha and C apply in the last one only.
// An operand larger than one binding is bound in windows and Y computed in blocks (matmul.cpp):
// M, N here are the block's rows and columns, m and n local to it; a_shift and b_shift (added
// modulo 2^32, so they may stand for negative values) map an element to its window,
// c_base/y_base locate the block in C and in Y (row stride ldy; Partial is indexed like Y).
// A fused residual (HAS_RES; MatMul's and Gemm's porta_residual, indexed like Y) and the fused
// activation (activation.glsl; ACT, act_alpha, act_beta) apply to what the last dispatch
// writes: Y = Act(alpha * A x B + beta * C + R).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int HAS_BIAS = 0;
layout(constant_id = 2) const int ACT = 0;
layout(constant_id = 3) const int HAS_RES = 0;
layout(std430, binding = 0) readonly buffer A { STORAGE a[]; };
layout(std430, binding = 1) readonly buffer B { STORAGE b[]; };
layout(std430, binding = 2) readonly buffer C { STORAGE c[]; };
layout(std430, binding = 3) readonly buffer Offsets { int offsets[]; };
layout(std430, binding = 4) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 5) buffer Partial { float partial[]; };
layout(std430, binding = 6) readonly buffer R { STORAGE res[]; };
layout(push_constant) uniform Params {
  uint M, N, K;
  uint sam, sak, sbk, sbn, scm, scn;
  float alpha, beta;
  uint k_begin;  // first k of this dispatch (a multiple of TK)
  uint pass;     // 1: add Partial, 2: store to Partial (not the last dispatch)
  uint a_shift, b_shift;  // added to A's and B's indices (window start, block origin)
  uint c_base, y_base;    // the block's first element in C and in Y/Partial
  uint ldy;               // Y's row stride (its full N)
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

const uint TILE = 64, TK = 16;
shared float tile_a[TK][TILE];
shared float tile_b[TK][TILE];

void main() {
  uint t = gl_LocalInvocationIndex;  // 0..255
  uint tx = t % 16, ty = t / 16;
  uint row0 = gl_WorkGroupID.y * TILE, col0 = gl_WorkGroupID.x * TILE;
  uint batch = gl_WorkGroupID.z;
  uint a_off = uint(offsets[2 * batch]), b_off = uint(offsets[2 * batch + 1]);
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (uint k0 = p.k_begin; k0 < p.K; k0 += TK) {
    // Each invocation stages 4 elements of A's 64x16 tile and 4 of B's 16x64 tile.
    for (uint e = t; e < TILE * TK; e += 256) {
      uint kk = e % TK, mm = e / TK;
      uint m = row0 + mm, k = k0 + kk;
      tile_a[kk][mm] = (m < p.M && k < p.K) ? float(a[a_off + m * p.sam + k * p.sak + p.a_shift]) : 0.0;
      uint nn = e % TILE, kb = e / TILE;
      uint n = col0 + nn, k2 = k0 + kb;
      tile_b[kb][nn] = (n < p.N && k2 < p.K) ? float(b[b_off + k2 * p.sbk + n * p.sbn + p.b_shift]) : 0.0;
    }
    barrier();
    for (uint kk = 0; kk < TK; ++kk) {
      float av[4], bv[4];
      for (int i = 0; i < 4; ++i) av[i] = tile_a[kk][ty + 16 * i];
      for (int j = 0; j < 4; ++j) bv[j] = tile_b[kk][tx + 16 * j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }

  for (int i = 0; i < 4; ++i) {
    uint m = row0 + ty + 16 * i;
    if (m >= p.M) continue;
    for (int j = 0; j < 4; ++j) {
      uint n = col0 + tx + 16 * j;
      if (n >= p.N) continue;
      uint at = p.y_base + batch * p.M * p.ldy + m * p.ldy + n;
      float sum = acc[i][j];
      if ((p.pass & 1u) != 0u) sum += partial[at];
      if ((p.pass & 2u) != 0u) {
        partial[at] = sum;
        continue;
      }
      float v = p.alpha * sum;
      if (HAS_BIAS != 0) v += p.beta * float(c[p.c_base + m * p.scm + n * p.scn]);
      if (HAS_RES != 0) v += float(res[at]);
      y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
    }
  }
}
