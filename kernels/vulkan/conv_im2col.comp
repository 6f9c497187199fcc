// variants: f32 f16
// Conv's columns for matmul_texel.comp (kernels/vulkan/conv.cpp, implementation "im2col"), for
// images n0, n0 + 1, ... (as many as the scratch holds; conv.cpp loops over such chunks). For
// block b = (image n, group g) and row k = (channel c, tap), the row holds input values at
// every output position p (zero where the tap lies in the padding, and in the pad columns
// P..ldc-1): col[(b*Kp + k)*ldc + p]. Rows K..Kp-1 are zero. Each invocation writes 4
// consecutive positions (one vec4). X is read as a texel buffer of one element per texel (a
// vectorized gather on lavapipe, where storage-buffer loads are scalar loops over the lanes).
// The weights' rows are padded by pack.comp.
// 1-D convolutions run as 2-D with one row (H = OH = KH = 1).
#version 450
#include "common.glsl"

#ifdef PORTA_F16
#define STORAGE4 f16vec4
#else
#define STORAGE4 vec4
#endif

layout(binding = 0) uniform samplerBuffer X;  // one element per texel (R32F / R16F)
layout(std430, binding = 1) writeonly buffer Col { STORAGE4 col[]; };
layout(push_constant) uniform Params {
  uint total;   // vec4s to write
  uint K, Kp;   // rows (channels per group x taps) and padded rows
  uint ldc;     // positions per row, padded to a multiple of 4
  uint n0;      // first image of this scratch
  uint groups, cin, H, W, OW, P;
  uint KH, KW, sh, sw, ph, pw, dh, dw;
} p;

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint q = p.ldc / 4;
  uint p0 = i % q * 4, row = i / q;  // row = b * Kp + k
  uint k = row % p.Kp, b = row / p.Kp;
  vec4 v = vec4(0.0);
  if (k < p.K) {
    uint taps = p.KH * p.KW;
    uint c = k / taps, t = k % taps;
    uint kh = t / p.KW, kw = t % p.KW;
    uint n = p.n0 + b / p.groups, g = b % p.groups;
    uint plane = ((n * p.groups + g) * p.cin + c) * p.H;  // (n, channel) plane's first row
    for (int j = 0; j < 4; ++j) {
      uint pos = p0 + j;
      if (pos >= p.P) break;
      int ih = int(pos / p.OW * p.sh + kh * p.dh) - int(p.ph);
      int iw = int(pos % p.OW * p.sw + kw * p.dw) - int(p.pw);
      if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W)) v[j] = texelFetch(X, int((plane + uint(ih)) * p.W + uint(iw))).x;
    }
  }
  col[i] = STORAGE4(v);
}
