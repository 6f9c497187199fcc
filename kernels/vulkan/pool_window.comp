// variants: f32 f16
// MaxPool (MAX = 1) / AveragePool (MAX = 0) over N x C x H x W on CPU-like devices (pool.cpp,
// implementation "window"): each invocation computes 4 consecutive outputs of one output row,
// gathering each input as one texel (R32F / R16F; on lavapipe a vectorized gather, where every
// storage-buffer load is a scalar loop over the lanes), its indices found with div21 below
// 2^21 (SMALL). Window geometry comes from the host (ops/pool.hpp), as for pool.comp, with the
// same rules: MaxPool takes the first tap inside the input, then any strictly greater one (so
// NaN counts only as the first tap); AveragePool divides by the taps inside [lo, hi) per axis.
// ROW (pool.cpp sets it for windows up to 8 high and wide, horizontal strides and dilations up
// to 4): the window's height and width, horizontal stride and dilation are specialization
// constants, so the taps unroll, and the SPAN inputs of a row that the 4 outputs share are
// fetched once (6 for a 3x3 window of stride 1, where the taps read 12); a row in the padding
// is read clamped and left out by a select (on lavapipe a branch that differs between
// invocations runs both ways). VEC_OUT (outputs whose width is a multiple of 4): the 4 outputs
// leave as one vector store (a store is a loop over the SIMD lanes).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int MAX = 1;
layout(constant_id = 2) const int SMALL = 0;
layout(constant_id = 3) const int ROW = 0;
layout(constant_id = 4) const int RKW = 1;  // with ROW: KW, sw and dw
layout(constant_id = 5) const int RSW = 1;
layout(constant_id = 6) const int RDW = 1;
layout(constant_id = 7) const int RKH = 1;  // with ROW: KH
layout(constant_id = 8) const int VEC_OUT = 0;
const int SPAN = 3 * RSW + (RKW - 1) * RDW + 1;
layout(binding = 0) uniform samplerBuffer X;
layout(std430, binding = 1) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 2) writeonly buffer Y4 { STORAGE4 y4[]; };  // Y again (VEC_OUT)
layout(push_constant) uniform Params {
  uint total;  // N * C * OH * quads
  uint quads;  // ceil(OW / 4)
  uint H, W, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw;
  int lo_h, hi_h, lo_w, hi_w;  // AveragePool's divisor counts taps inside these
} p;

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint rest = dv(i, p.quads), q = i - rest * p.quads;
  uint plane = dv(rest, p.OH), oh = rest - plane * p.OH;
  int ow0 = int(q * 4u);
  vec4 acc = vec4(MAX != 0 ? -1.0 / 0.0 : 0.0);
  bvec4 seen = bvec4(false);
  for (uint kh = 0u; kh < (ROW != 0 ? uint(RKH) : p.KH); ++kh) {
    int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
    bool in_h = ih >= 0 && ih < int(p.H);
    if (ROW == 0 && !in_h) continue;
    int row = int((plane * p.H + uint(clamp(ih, 0, int(p.H) - 1))) * p.W);
    if (ROW != 0) {
      int iw0 = ow0 * RSW - int(p.pw);
      float seg[SPAN];
      bool in_row[SPAN];
      for (int t = 0; t < SPAN; ++t) {
        int iw = iw0 + t;
        in_row[t] = in_h && iw >= 0 && iw < int(p.W);
        seg[t] = texelFetch(X, row + clamp(iw, 0, int(p.W) - 1)).x;
      }
      for (int kw = 0; kw < RKW; ++kw)
        for (int j = 0; j < 4; ++j) {
          float v = seg[j * RSW + kw * RDW];
          bool inside = in_row[j * RSW + kw * RDW];
          if (MAX != 0) {
            if (inside && (!seen[j] || v > acc[j])) acc[j] = v;
            seen[j] = seen[j] || inside;
          } else {
            acc[j] += inside ? v : 0.0;
          }
        }
      continue;
    }
    for (uint kw = 0u; kw < p.KW; ++kw) {
      for (int j = 0; j < 4; ++j) {
        int iw = (ow0 + j) * int(p.sw) + int(kw * p.dw) - int(p.pw);
        bool inside = iw >= 0 && iw < int(p.W);
        float v = texelFetch(X, row + clamp(iw, 0, int(p.W) - 1)).x;
        if (MAX != 0) {
          if (inside && (!seen[j] || v > acc[j])) acc[j] = v;
          seen[j] = seen[j] || inside;
        } else {
          acc[j] += inside ? v : 0.0;
        }
      }
    }
  }
  if (MAX == 0) {
    int rows = 0;
    for (uint kh = 0u; kh < p.KH; ++kh) {
      int at = int(oh * p.sh + kh * p.dh) - int(p.ph);
      rows += at >= p.lo_h && at < p.hi_h ? 1 : 0;
    }
    for (int j = 0; j < 4; ++j) {
      int cols = 0;
      for (uint kw = 0u; kw < p.KW; ++kw) {
        int at = (ow0 + j) * int(p.sw) + int(kw * p.dw) - int(p.pw);
        cols += at >= p.lo_w && at < p.hi_w ? 1 : 0;
      }
      acc[j] /= float(rows * cols);
    }
  }
  uint out_row = (plane * p.OH + oh) * p.OW;
  if (VEC_OUT != 0) {
    y4[(out_row + uint(ow0)) / 4u] = STORAGE4(acc);
    return;
  }
  for (int j = 0; j < 4; ++j)
    if (uint(ow0 + j) < p.OW) y[out_row + uint(ow0 + j)] = STORAGE(acc[j]);
}
