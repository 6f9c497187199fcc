// variants: f32 f16
// Depthwise Conv (group = input channels, any channel multiplier; conv.cpp, implementation
// "depthwise_rows") and grouped Conv with few input channels per group ("grouped_rows") on
// CPU-like devices, where the kernel's width, horizontal stride and dilation are small enough
// (conv.cpp's kDepthwiseSpan), 2-D. Output channel oc reads the cpg input channels of its group
// (oc / ocpg), one after the other (cpg = 1 for depthwise). Each invocation computes 8
// consecutive outputs of one output row. The kernel's height and width, horizontal stride and
// dilation are specialization constants, so every loop below unrolls and the input row segment
// the 8 outputs share (7 * SW + (KW - 1) * DW + 1 elements) is fetched once into registers:
// for a 3x3 stride-1 kernel, 39 texel fetches per 8 outputs where conv_depthwise.comp makes 90
// (on lavapipe each fetch is a vectorized gather, the kernel's cost). X, the weights and the
// bias are uniform texel buffers of one element per texel; an input in the padding counts as
// zero. Accumulation is fp32; the fused residual and activation (activation.glsl) apply at the
// store.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;     // R32F / R16F; with VEC4, RGBA32F / RGBA16F
layout(binding = 1) uniform samplerBuffer Wt;    // (OC, cpg, KH, KW)
layout(binding = 2) uniform samplerBuffer Bias;  // (OC), or a stand-in when has_bias = 0
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) readonly buffer R { STORAGE res[]; };
layout(constant_id = 1) const int ACT = 0;
layout(constant_id = 2) const int HAS_RES = 0;
layout(constant_id = 3) const int SMALL = 0;  // every index below 2^21: div21 for '/'
layout(constant_id = 4) const int KH = 3;
layout(constant_id = 5) const int KW = 3;
layout(constant_id = 6) const int SW = 1;
layout(constant_id = 7) const int DW = 1;
// VEC4: X is read as 4-element texels, for inputs whose width is a multiple of 4: then every
// row segment starts ALIGN elements into a texel (ALIGN = -pw mod 4, the same for every
// invocation) and ceil((ALIGN + SPAN) / 4) fetches cover it.
layout(constant_id = 8) const int VEC4 = 0;
layout(constant_id = 9) const int ALIGN = 0;
layout(push_constant) uniform Params {
  uint total;      // invocations: N * OC * OH * octs
  uint octs;       // ceil(OW / 8)
  uint C, H, W, OC, OH, OW, ocpg;  // ocpg = OC / group
  uint cpg;                        // C / group
  uint sh, ph, pw, dh;
  uint has_bias;
  uint x_texels;   // VEC4: X's 4-element texels
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

const int OUTS = 8;
const int SPAN = (OUTS - 1) * SW + (KW - 1) * DW + 1;  // at most MAX_SPAN (conv.cpp checks)
const int MAX_SPAN = 32;
const int NT = (ALIGN + SPAN + 3) / 4;  // VEC4: texels per row segment

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint rest = dv(i, p.octs), q = i - rest * p.octs;
  uint plane = dv(rest, p.OH), oh = rest - plane * p.OH;  // plane = n * OC + oc
  uint n = dv(plane, p.OC), oc = plane - n * p.OC;
  uint in_plane0 = n * p.C + dv(oc, p.ocpg) * p.cpg;  // n * C + the group's first channel
  int ow0 = int(q) * OUTS;
  int iw0 = ow0 * SW - int(p.pw);
  int last = int(p.W) - 1;
  float b = p.has_bias != 0 ? texelFetch(Bias, int(oc)).x : 0.0;
  float acc[OUTS];
  for (int j = 0; j < OUTS; ++j) acc[j] = b;
  for (uint ci = 0u; ci < p.cpg; ++ci)
  for (int kh = 0; kh < KH; ++kh) {
    int ih = int(oh * p.sh + uint(kh) * p.dh) - int(p.ph);
    if (ih < 0 || ih >= int(p.H)) continue;
    int row = int(((in_plane0 + ci) * p.H + uint(ih)) * p.W);
    float xs[MAX_SPAN];
    if (VEC4 != 0) {
      // Texel t0 holds elements row + iw0 - ALIGN ... (a multiple of 4: row and ow0 * SW are).
      int t0 = (row + iw0 - ALIGN) >> 2;
      vec4 tx[(MAX_SPAN + 3) / 4 + 1];
      for (int k = 0; k < NT; ++k) tx[k] = texelFetch(X, clamp(t0 + k, 0, int(p.x_texels) - 1));
      for (int t = 0; t < SPAN; ++t) {
        int iw = iw0 + t;
        xs[t] = iw >= 0 && iw <= last ? tx[(ALIGN + t) >> 2][(ALIGN + t) & 3] : 0.0;
      }
    } else {
      for (int t = 0; t < SPAN; ++t) {
        int iw = iw0 + t;
        float v = texelFetch(X, row + clamp(iw, 0, last)).x;
        xs[t] = iw >= 0 && iw <= last ? v : 0.0;
      }
    }
    int wrow = int(((oc * p.cpg + ci) * uint(KH) + uint(kh)) * uint(KW));
    for (int kw = 0; kw < KW; ++kw) {
      float wv = texelFetch(Wt, wrow + kw).x;
      for (int j = 0; j < OUTS; ++j) acc[j] += xs[j * SW + kw * DW] * wv;
    }
  }
  uint out_row = (plane * p.OH + oh) * p.OW;
  for (int j = 0; j < OUTS; ++j) {
    if (uint(ow0 + j) >= p.OW) break;
    uint at = out_row + uint(ow0 + j);
    float v = acc[j];
    if (HAS_RES != 0) v += float(res[at]);
    y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
  }
}
