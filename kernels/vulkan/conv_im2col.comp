// variants: f32 f16
// Conv's columns for matmul_texel.comp (kernels/vulkan/conv.cpp, implementation "im2col"), for
// images n0, n0 + 1, ... (as many as the scratch holds; conv.cpp loops over such chunks). For
// block b = (image n, group g) and row k = (channel c, tap), the row holds input values at
// every output position p (zero where the tap lies in the padding, and in the pad columns
// P..ldc-1): col[(b*Kp + k)*ldc + p]. Rows K..Kp-1 are zero. Each invocation writes 4
// consecutive positions (one vec4); with ROWS (output rows of a multiple of 4 positions), each
// writes a whole output row of one k, OW / 4 vec4s, its indices found once. X is read as a
// texel buffer of one element per texel (a
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

// Every index below 2^21 (the host sets SMALL): div21 instead of an integer division.
layout(constant_id = 1) const int SMALL = 0;
layout(constant_id = 2) const int ROWS = 0;  // total counts (block, k, output row) triples
uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

// ROWS: the output row oh of row k of block b, OW / 4 vec4s.
void write_row(uint i) {
  uint OH = p.P / p.OW, q = p.ldc / 4;
  uint row = dv(i, OH), oh = i - row * OH;  // row = b * Kp + k
  uint b = dv(row, p.Kp), k = row - b * p.Kp;
  uint dst0 = row * q + oh * (p.OW / 4);
  if (k >= p.K) {
    for (uint j = 0; j < p.OW / 4; ++j) col[dst0 + j] = STORAGE4(vec4(0.0));
    return;
  }
  uint taps = p.KH * p.KW;
  uint c = dv(k, taps), t = k - c * taps;
  uint kh = dv(t, p.KW), kw = t - kh * p.KW;
  uint bn = dv(b, p.groups), g = b - bn * p.groups;
  int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
  bool row_inside = ih >= 0 && ih < int(p.H);
  int src = int((((p.n0 + bn) * p.groups + g) * p.cin + c) * p.H + uint(clamp(ih, 0, int(p.H) - 1))) * int(p.W);
  int iw0 = int(kw * p.dw) - int(p.pw);
  for (uint j = 0; j < p.OW / 4; ++j) {
    vec4 v;
    for (int e = 0; e < 4; ++e) {
      int iw = int((j * 4u + uint(e)) * p.sw) + iw0;
      bool inside = row_inside && iw >= 0 && iw < int(p.W);
      float x = texelFetch(X, src + clamp(iw, 0, int(p.W) - 1)).x;
      v[e] = inside ? x : 0.0;
    }
    col[dst0 + j] = STORAGE4(v);
  }
}

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  if (ROWS != 0) {
    write_row(i);
    return;
  }
  uint q = p.ldc / 4;
  uint row = dv(i, q), p0 = (i - row * q) * 4;  // row = b * Kp + k
  uint b = dv(row, p.Kp), k = row - b * p.Kp;
  vec4 v = vec4(0.0);
  if (k < p.K) {
    uint taps = p.KH * p.KW;
    uint c = dv(k, taps), t = k - c * taps;
    uint kh = dv(t, p.KW), kw = t - kh * p.KW;
    uint bn = dv(b, p.groups), g = b - bn * p.groups;
    uint n = p.n0 + bn;
    uint plane = ((n * p.groups + g) * p.cin + c) * p.H;  // (n, channel) plane's first row
    uint oh = dv(p0, p.OW), ow = p0 - oh * p.OW;  // position p0, then the next three
    for (int j = 0; j < 4; ++j) {
      if (p0 + j >= p.P) break;
      int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
      int iw = int(ow * p.sw + kw * p.dw) - int(p.pw);
      if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W)) v[j] = texelFetch(X, int((plane + uint(ih)) * p.W + uint(iw))).x;
      if (++ow == p.OW) {
        ow = 0;
        ++oh;
      }
    }
  }
  col[i] = STORAGE4(v);
}
