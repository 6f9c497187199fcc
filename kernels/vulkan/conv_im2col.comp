// variants: f32 f16
// Conv's columns for matmul_texel.comp (kernels/vulkan/conv.cpp, implementation "im2col"), for
// images n0, n0 + 1, ... (as many as the scratch holds; conv.cpp loops over such chunks). For
// block b = (image n, group g) and row k = (channel c, tap (kd, kh, kw)), the row holds input
// values at every output position p = (od, oh, ow) (zero where the tap lies in the padding, and
// in the pad columns P..ldc-1): col[(b*Kp + k)*ldc + p]. Rows K..Kp-1 are zero. Each invocation
// writes 4 consecutive positions (one vec4); with ROWS (output rows of at least 3 positions),
// each writes the vec4s that start in one output row (od, oh) of one k, its indices found
// once. X is read as a texel buffer of one element per texel (a vectorized gather on lavapipe,
// where storage-buffer loads are scalar loops over the lanes). The weights' rows are padded by
// pack.comp. 2-D convolutions run as 3-D with one plane (D = OD = KD = 1), 1-D ones also with
// one row (H = OH = KH = 1).
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;  // one element per texel (R32F / R16F)
layout(std430, binding = 1) writeonly buffer Col { STORAGE4 col[]; };
layout(push_constant) uniform Params {
  uint total;   // vec4s to write
  uint K, Kp;   // rows (channels per group x taps) and padded rows
  uint ldc;     // positions per row, padded to a multiple of 4
  uint n0;      // first image of this scratch
  uint groups, cin, H, W, OW, P;
  uint KH, KW, sh, sw, ph, pw, dh, dw;
  uint D, OH, KD, sd, pd, dd;  // the depth axis of 3-D convolutions
} p;

// Every index below 2^21 (the host sets SMALL): div21 instead of an integer division.
layout(constant_id = 1) const int SMALL = 0;
layout(constant_id = 2) const int ROWS = 0;  // 1, 2: total counts (block, k, output row) triples
uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

// Where output row r = (od, oh) of channel c's tap (kd, kh) reads X: the first element of that
// input row (clamped inside X) and whether the row lies inside (not in the padding).
void source_row(uint r, uint volume, uint kd, uint kh, out int src, out bool inside) {
  uint od = dv(r, p.OH), oh = r - od * p.OH;
  int id = int(od * p.sd + kd * p.dd) - int(p.pd);
  int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
  inside = id >= 0 && id < int(p.D) && ih >= 0 && ih < int(p.H);
  uint plane = volume + uint(clamp(id, 0, int(p.D) - 1));
  src = int(plane * p.H + uint(clamp(ih, 0, int(p.H) - 1))) * int(p.W);
}

// ROWS: for row k of block b, the vec4s whose first position lies in output row r = (od, oh)
// (ROWS = 1: OW a multiple of 4, so exactly the row's OW / 4 vec4s; ROWS = 2: OW >= 3 otherwise,
// so the last of them may run into row r + 1, and the last row's also covers the pad columns).
void write_row(uint i) {
  uint rows = p.P / p.OW, q = p.ldc / 4;  // OD x OH output rows
  uint row = dv(i, rows), r = i - row * rows;  // row = b * Kp + k, r = od * OH + oh
  uint b = dv(row, p.Kp), k = row - b * p.Kp;
  uint start = r * p.OW;  // the row's first position
  uint q0 = ROWS == 1 ? start / 4 : (start + 3) / 4;
  uint q1 = ROWS == 1 ? q0 + p.OW / 4 : (r + 1 == rows ? q : (start + p.OW + 3) / 4);
  uint dst = row * q;
  if (k >= p.K) {
    for (uint j = q0; j < q1; ++j) col[dst + j] = STORAGE4(vec4(0.0));
    return;
  }
  uint plane_taps = p.KH * p.KW;
  uint c = dv(k, p.KD * plane_taps), t = k - c * (p.KD * plane_taps);
  uint kd = dv(t, plane_taps);
  t -= kd * plane_taps;
  uint kh = dv(t, p.KW), kw = t - kh * p.KW;
  uint bn = dv(b, p.groups), g = b - bn * p.groups;
  uint volume = (((p.n0 + bn) * p.groups + g) * p.cin + c) * p.D;  // (n, channel)'s first plane
  int src, src_next = 0;
  bool row_inside, next_inside = false;
  source_row(r, volume, kd, kh, src, row_inside);
  if (ROWS == 2) {
    source_row(min(r + 1, rows - 1), volume, kd, kh, src_next, next_inside);
    next_inside = next_inside && r + 1 < rows;
  }
  int iw0 = int(kw * p.dw) - int(p.pw);
  for (uint j = q0; j < q1; ++j) {
    vec4 v;
    for (int e = 0; e < 4; ++e) {
      int ow = int(j * 4u + uint(e) - start);
      int from = src;
      bool inside = row_inside;
      if (ROWS == 2 && ow >= int(p.OW)) {  // row r + 1 (or past the last row: a pad column)
        ow -= int(p.OW);
        from = src_next;
        inside = next_inside;
      }
      int iw = ow * int(p.sw) + iw0;
      inside = inside && iw >= 0 && iw < int(p.W);
      float x = texelFetch(X, from + clamp(iw, 0, int(p.W) - 1)).x;
      v[e] = inside ? x : 0.0;
    }
    col[dst + j] = STORAGE4(v);
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
    uint plane_taps = p.KH * p.KW;
    uint c = dv(k, p.KD * plane_taps), t = k - c * (p.KD * plane_taps);
    uint kd = dv(t, plane_taps);
    t -= kd * plane_taps;
    uint kh = dv(t, p.KW), kw = t - kh * p.KW;
    uint bn = dv(b, p.groups), g = b - bn * p.groups;
    uint n = p.n0 + bn;
    uint volume = ((n * p.groups + g) * p.cin + c) * p.D;  // (n, channel)'s first plane
    uint r = dv(p0, p.OW), ow = p0 - r * p.OW;  // position p0 = (od, oh, ow), then the next three
    uint od = dv(r, p.OH), oh = r - od * p.OH;
    for (int j = 0; j < 4; ++j) {
      if (p0 + j >= p.P) break;
      int id = int(od * p.sd + kd * p.dd) - int(p.pd);
      int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
      int iw = int(ow * p.sw + kw * p.dw) - int(p.pw);
      if (id >= 0 && id < int(p.D) && ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W))
        v[j] = texelFetch(X, int(((volume + uint(id)) * p.H + uint(ih)) * p.W + uint(iw))).x;
      if (++ow == p.OW) {
        ow = 0;
        if (++oh == p.OH) {
          oh = 0;
          ++od;
        }
      }
    }
  }
  col[i] = STORAGE4(v);
}
