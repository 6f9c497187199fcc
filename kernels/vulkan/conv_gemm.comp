// variants: f32 f16
// Conv as implicit GEMM, tiled like matmul.comp (64x64 output tile per 256-invocation
// workgroup, 4x4 register micro-tile, K in steps of 16, fp32 accumulation). Per group g
// (workgroup z):
//   Y[m, n] = sum_k W[m, k] * col[k, n] (+ bias[m])
// with m an output channel of the group, n = (batch, output position), k = (input channel of
// the group, kernel tap); col is gathered from X on the fly (zero outside the input).
// One dispatch sums k in [k_begin, k_end): the host splits a long K over several dispatches
// when one would loop more often per invocation than the driver allows (window.cpp). `pass`
// bit 1 adds the fp32 partial sums of earlier dispatches (Partial, indexed like Y); bit 2
// stores the sums there instead of writing Y (every dispatch but the last, which adds the bias,
// the fused residual and the fused activation: activation.glsl).
#version 450
#include "common.glsl"

layout(std430, binding = 0) readonly buffer X { STORAGE x[]; };
layout(std430, binding = 1) readonly buffer W { STORAGE w[]; };
layout(std430, binding = 2) readonly buffer B { STORAGE bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) buffer Partial { float partial[]; };
layout(std430, binding = 5) readonly buffer R { STORAGE res[]; };
layout(constant_id = 1) const int ACT = 0;
layout(constant_id = 2) const int HAS_RES = 0;
layout(push_constant) uniform Params {
  uint batch;
  uint spatial;
  int c_in, c_out, group;
  int in_size[3];
  int out_size[3];
  int kernel[3];
  int stride[3];
  int pad[3];
  int dilation[3];
  uint has_bias;
  uint k_begin, k_end;  // this dispatch's slice of K (k_begin a multiple of TK)
  uint pass;            // 1: add Partial, 2: store to Partial (not the last dispatch)
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

const uint TILE = 64, TK = 16;
shared float tile_a[TK][TILE];
shared float tile_b[TK][TILE];

void main() {
  uint t = gl_LocalInvocationIndex;
  uint tx = t % 16, ty = t / 16;
  int osize = 1, isize = 1, ksize = 1;
  for (uint d = 0; d < p.spatial; ++d) { osize *= p.out_size[d]; isize *= p.in_size[d]; ksize *= p.kernel[d]; }
  int cin_g = p.c_in / p.group, cout_g = p.c_out / p.group;
  uint M = uint(cout_g), N = p.batch * uint(osize), K = uint(cin_g * ksize);
  uint k_end = min(K, p.k_end);
  uint g = gl_WorkGroupID.z;
  uint row0 = gl_WorkGroupID.y * TILE, col0 = gl_WorkGroupID.x * TILE;
  float acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;

  for (uint k0 = p.k_begin; k0 < k_end; k0 += TK) {
    for (uint e = t; e < TILE * TK; e += 256) {
      uint kk = e % TK, mm = e / TK;
      uint m = row0 + mm, k = k0 + kk;
      tile_a[kk][mm] = (m < M && k < k_end) ? float(w[(g * M + m) * K + k]) : 0.0;
      uint nn = e % TILE, kb = e / TILE;
      uint n = col0 + nn, k2 = k0 + kb;
      float v = 0.0;
      if (n < N && k2 < k_end) {
        int c = int(k2) / ksize, tap = int(k2) % ksize;
        int nb = int(n) / osize, opos = int(n) % osize;
        int pos = 0;
        bool inside = true;
        int orest = opos, krest = tap;
        int at[3];
        for (int d = int(p.spatial) - 1; d >= 0; --d) {
          int o = orest % p.out_size[d], kd = krest % p.kernel[d];
          orest /= p.out_size[d];
          krest /= p.kernel[d];
          at[d] = o * p.stride[d] - p.pad[d] + kd * p.dilation[d];
          inside = inside && at[d] >= 0 && at[d] < p.in_size[d];
        }
        if (inside) {
          for (uint d = 0; d < p.spatial; ++d) pos = pos * p.in_size[d] + at[d];
          v = float(x[(nb * p.c_in + int(g) * cin_g + c) * isize + pos]);
        }
      }
      tile_b[kb][nn] = v;
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
    if (m >= M) continue;
    uint oc = g * M + m;
    float b = p.has_bias != 0 ? float(bias[oc]) : 0.0;
    for (int j = 0; j < 4; ++j) {
      uint n = col0 + tx + 16 * j;
      if (n >= N) continue;
      uint nb = n / uint(osize), opos = n % uint(osize);
      uint at = (nb * uint(p.c_out) + oc) * uint(osize) + opos;
      float sum = acc[i][j];
      if ((p.pass & 1u) != 0u) sum += partial[at];
      if ((p.pass & 2u) != 0u) {
        partial[at] = sum;
        continue;
      }
      sum += b;
      if (HAS_RES != 0) sum += float(res[at]);
      y[at] = STORAGE(fused_activation(sum, p.act_alpha, p.act_beta));
    }
  }
}
