// variants: f32 f16
// Depthwise Conv (group = input channels, any channel multiplier; conv.cpp, implementation
// "depthwise_rows") and grouped Conv with few input channels per group ("grouped_rows") on
// CPU-like devices, where the kernel's width, horizontal stride and dilation are small enough
// (conv.cpp's kDepthwiseSpan), 2-D. Output channel oc reads the CPG input channels of its
// group (oc / ocpg), one after the other (CPG = 1 for depthwise). Each invocation computes a
// block of ROWS output rows by OUTS consecutive outputs (OUTS 8, or 4 for maps at most 4 wide).
// The kernel's shape, strides, dilations, the block and the channels per group are
// specialization constants, so every loop below unrolls: each input row the block reads is
// fetched once into registers (the row segment the OUTS outputs share, (OUTS - 1) * SW +
// (KW - 1) * DW + 1 elements) and serves every (output row, kernel row) pair that reads it, and
// a channel's weights are fetched once per block. On lavapipe each fetch is a vectorized
// gather, the kernel's cost, and a branch that differs between invocations runs both ways, so
// rows in the padding are read clamped and zeroed by a select. X, the weights and the bias are
// uniform texel buffers of one element per texel (X of 4 with VEC4). Accumulation is fp32;
// the fused residual and activation (activation.glsl) apply at the store.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;     // R32F / R16F; with VEC4, RGBA32F / RGBA16F
layout(binding = 1) uniform samplerBuffer Wt;    // (OC, CPG, KH, KW)
layout(binding = 2) uniform samplerBuffer Bias;  // (OC), or a stand-in when has_bias = 0
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) readonly buffer R { STORAGE res[]; };
layout(std430, binding = 5) writeonly buffer Y4 { STORAGE4 y4[]; };  // Y again (VEC_OUT)
layout(std430, binding = 6) readonly buffer R4 { STORAGE4 res4[]; };  // R again (VEC_OUT and HAS_RES)
layout(constant_id = 1) const int ACT = 0;
layout(constant_id = 2) const int HAS_RES = 0;
layout(constant_id = 3) const int SMALL = 0;  // every index below 2^21: div21 for '/'
layout(constant_id = 4) const int KH = 3;
layout(constant_id = 5) const int KW = 3;
layout(constant_id = 6) const int SW = 1;
layout(constant_id = 7) const int DW = 1;
// VEC4: X is read as 4-element texels, for inputs whose width is a multiple of 4: then every
// row segment starts ALIGN elements into a texel (ALIGN = -pw mod 4, the same for every
// invocation; OUTS * SW is a multiple of 4) and ceil((ALIGN + SPAN) / 4) fetches cover it.
layout(constant_id = 8) const int VEC4 = 0;
layout(constant_id = 9) const int ALIGN = 0;
layout(constant_id = 10) const int CPG = 1;   // input channels per group
layout(constant_id = 11) const int SH = 1;
layout(constant_id = 12) const int DH = 1;
layout(constant_id = 13) const int ROWS = 1;  // output rows per invocation
layout(constant_id = 14) const int OUTS = 8;  // outputs per row per invocation (4 or 8)
// VEC_OUT: Y (and R) written (read) as 4-element vectors, for outputs whose width is a
// multiple of 4 (and Y, R starting on one): on lavapipe a store is a loop over the SIMD lanes,
// so one of 4 elements costs little more than one of 1.
layout(constant_id = 15) const int VEC_OUT = 0;
layout(push_constant) uniform Params {
  uint total;      // invocations: N * OC * blocks * octs
  uint octs;       // ceil(OW / OUTS)
  uint blocks;     // ceil(OH / ROWS)
  uint C, H, W, OC, OH, OW, ocpg;  // ocpg = OC / group
  uint ph, pw;
  uint has_bias;
  uint x_texels;   // VEC4: X's 4-element texels
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

const int SPAN = (OUTS - 1) * SW + (KW - 1) * DW + 1;  // at most MAX_SPAN (conv.cpp checks)
const int MAX_SPAN = 32;
const int NT = (ALIGN + SPAN + 3) / 4;  // VEC4: texels per row segment
const int SPAN_H = (ROWS - 1) * SH + (KH - 1) * DH + 1;  // input rows a block reads
const int PRELOAD = 25;

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint rest = dv(i, p.octs), q = i - rest * p.octs;
  uint plane = dv(rest, p.blocks), blk = rest - plane * p.blocks;  // plane = n * OC + oc
  uint n = dv(plane, p.OC), oc = plane - n * p.OC;
  uint in_plane0 = n * p.C + dv(oc, p.ocpg) * uint(CPG);  // n * C + the group's first channel
  int oh0 = int(blk) * ROWS;
  int ow0 = int(q) * OUTS;
  int iw0 = ow0 * SW - int(p.pw);
  int ih0 = oh0 * SH - int(p.ph);
  int last = int(p.W) - 1;
  float b = p.has_bias != 0 ? texelFetch(Bias, int(oc)).x : 0.0;
  float acc[ROWS][OUTS];
  for (int o = 0; o < ROWS; ++o)
    for (int j = 0; j < OUTS; ++j) acc[o][j] = b;
  for (int ci = 0; ci < CPG; ++ci) {
    // Kernels of up to PRELOAD taps: the channel's weights fetched once (a block of rows reads
    // each kernel row more than once); larger ones as each tap is used (a longer loop here is
    // not unrolled on lavapipe, and its array then lives in memory: 3x slower at 7x7).
    float wv[PRELOAD];
    int w0 = int((oc * uint(CPG) + uint(ci)) * uint(KH * KW));
    if (KH * KW <= PRELOAD)
      for (int t = 0; t < KH * KW; ++t) wv[t] = texelFetch(Wt, w0 + t).x;
    uint plane_row0 = (in_plane0 + uint(ci)) * p.H;
    // One output row: the kernel's rows (DH apart). A block (conv.cpp takes ROWS > 1 only
    // without vertical dilation): the SPAN_H consecutive rows it reads, each serving the
    // (output row, kernel row) pairs that read it; which ones is known at compile time.
    for (int step = 0; step < (ROWS == 1 ? KH : SPAN_H); ++step) {
      int rel = ROWS == 1 ? step * DH : step;
      int ih = ih0 + rel;
      // A row in the padding reads a clamped row and selects zeros.
      bool in_rows = ih >= 0 && ih < int(p.H);
      int row = int((plane_row0 + uint(clamp(ih, 0, int(p.H) - 1))) * p.W);
      float xs[MAX_SPAN];
      if (VEC4 != 0) {
        // Texel t0 holds elements row + iw0 - ALIGN ... (a multiple of 4: row and ow0 * SW are).
        int t0 = (row + iw0 - ALIGN) >> 2;
        vec4 tx[(MAX_SPAN + 3) / 4 + 1];
        for (int k = 0; k < NT; ++k) tx[k] = texelFetch(X, clamp(t0 + k, 0, int(p.x_texels) - 1));
        for (int t = 0; t < SPAN; ++t) {
          int iw = iw0 + t;
          xs[t] = in_rows && iw >= 0 && iw <= last ? tx[(ALIGN + t) >> 2][(ALIGN + t) & 3] : 0.0;
        }
      } else {
        for (int t = 0; t < SPAN; ++t) {
          int iw = iw0 + t;
          float v = texelFetch(X, row + clamp(iw, 0, last)).x;
          xs[t] = in_rows && iw >= 0 && iw <= last ? v : 0.0;
        }
      }
      // One output row: kernel row `step`. A block: the pairs that read this row, picked by
      // constants once the loops unroll (a block's loops are short: conv.cpp).
      if (ROWS == 1) {
        for (int kw = 0; kw < KW; ++kw) {
          float wt = KH * KW <= PRELOAD ? wv[step * KW + kw] : texelFetch(Wt, w0 + step * KW + kw).x;
          for (int j = 0; j < OUTS; ++j) acc[0][j] += xs[j * SW + kw * DW] * wt;
        }
      } else {
        for (int o = 0; o < ROWS; ++o)
          for (int kh = 0; kh < KH; ++kh) {
            if (o * SH + kh * DH != rel) continue;
            for (int kw = 0; kw < KW; ++kw)
              for (int j = 0; j < OUTS; ++j) acc[o][j] += xs[j * SW + kw * DW] * wv[kh * KW + kw];
          }
      }
    }
  }
  for (int o = 0; o < ROWS; ++o) {
    uint oh = uint(oh0 + o);
    uint out_row = (plane * p.OH + oh) * p.OW;
    if (VEC_OUT != 0) {
      for (int g = 0; g < OUTS / 4; ++g) {
        uint at4 = (out_row + uint(ow0 + 4 * g)) / 4u;
        if (oh < p.OH && uint(ow0 + 4 * g) < p.OW) {
          vec4 v = vec4(acc[o][4 * g], acc[o][4 * g + 1], acc[o][4 * g + 2], acc[o][4 * g + 3]);
          if (HAS_RES != 0) v += vec4(res4[at4]);
          for (int j = 0; j < 4; ++j) v[j] = fused_activation(v[j], p.act_alpha, p.act_beta);
          y4[at4] = STORAGE4(v);
        }
      }
      continue;
    }
    for (int j = 0; j < OUTS; ++j) {
      uint at = out_row + uint(ow0 + j);
      if (oh < p.OH && uint(ow0 + j) < p.OW) {
        float v = acc[o][j];
        if (HAS_RES != 0) v += float(res[at]);
        y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
      }
    }
  }
}
