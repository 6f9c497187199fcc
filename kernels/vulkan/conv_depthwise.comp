// variants: f32 f16
// Depthwise Conv (group = input channels, any channel multiplier) on CPU-like devices
// (conv.cpp, implementation "depthwise"), 2-D, any strides. Each invocation computes 4
// consecutive outputs of one output row (its indices found with div21 below 2^21). X, the weights
// and the bias are read through uniform texel buffers of one element per texel (vectorized
// gathers on lavapipe, where every storage-buffer load is a scalar loop over the lanes); an
// input in the padding counts as zero. Accumulation is fp32; the fused residual and activation
// (activation.glsl) apply at the store.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;     // R32F / R16F
layout(binding = 1) uniform samplerBuffer Wt;    // (OC, 1, KH, KW)
layout(binding = 2) uniform samplerBuffer Bias;  // (OC), or a stand-in when has_bias = 0
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) readonly buffer R { STORAGE res[]; };
layout(constant_id = 1) const int ACT = 0;
layout(constant_id = 2) const int HAS_RES = 0;
layout(constant_id = 3) const int SMALL = 0;  // every index below 2^21: div21 for '/'
layout(push_constant) uniform Params {
  uint total;      // invocations: N * OC * OH * quads
  uint quads;      // ceil(OW / 4)
  uint C, H, W, OC, OH, OW, mult;  // mult = OC / C
  uint KH, KW, sh, sw, ph, pw, dh, dw;
  uint has_bias;
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint rest = dv(i, p.quads), q = i - rest * p.quads;
  uint plane = dv(rest, p.OH), oh = rest - plane * p.OH;  // plane = n * OC + oc
  uint n = dv(plane, p.OC), oc = plane - n * p.OC;
  uint in_plane = n * p.C + dv(oc, p.mult);  // n * C + c
  uint ow0 = q * 4;
  vec4 acc = vec4(p.has_bias != 0 ? texelFetch(Bias, int(oc)).x : 0.0);
  for (uint kh = 0; kh < p.KH; ++kh) {
    int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
    if (ih < 0 || ih >= int(p.H)) continue;
    int row = int((in_plane * p.H + uint(ih)) * p.W);
    for (uint kw = 0; kw < p.KW; ++kw) {
      float wv = texelFetch(Wt, int((oc * p.KH + kh) * p.KW + kw)).x;
      int iw0 = int(ow0 * p.sw + kw * p.dw) - int(p.pw);
      for (int j = 0; j < 4; ++j) {
        int iw = iw0 + j * int(p.sw);
        bool inside = iw >= 0 && iw < int(p.W);
        float v = texelFetch(X, row + clamp(iw, 0, int(p.W) - 1)).x;
        acc[j] += inside ? v * wv : 0.0;
      }
    }
  }
  uint out_row = (plane * p.OH + oh) * p.OW;
  for (uint j = 0; j < 4 && ow0 + j < p.OW; ++j) {
    uint at = out_row + ow0 + j;
    float v = acc[j];
    if (HAS_RES != 0) v += float(res[at]);
    y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
  }
}
