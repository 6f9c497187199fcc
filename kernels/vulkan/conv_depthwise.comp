// variants: f32 f16
// Depthwise Conv (group = input channels, any channel multiplier) on CPU-like devices
// (conv.cpp, implementation "depthwise"), 2-D, stride along W at most 2. Each invocation
// computes 4 consecutive outputs of one row; per tap it reads the input once as 3 vec4 texels
// (12 elements cover the 4 taps' inputs at stride 2) and picks its elements from them, so no
// storage-buffer load (a scalar loop per lane on lavapipe) touches the input. Inputs in the
// padding count as zero; accumulation is fp32. The fused residual and activation
// (activation.glsl) apply at the store.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;
layout(std430, binding = 1) readonly buffer Wt { STORAGE w[]; };
layout(std430, binding = 2) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 3) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 4) readonly buffer R { STORAGE res[]; };
layout(constant_id = 1) const int ACT = 0;
layout(constant_id = 2) const int HAS_RES = 0;
layout(push_constant) uniform Params {
  uint total;      // invocations: N * OC * OH * ceil(OW / 4)
  uint C, H, W, OC, OH, OW, mult;  // mult = OC / C
  uint KH, KW, sh, sw, ph, pw, dh, dw;
  uint has_bias;
  uint last_texel;  // X's last texel index
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint qw = (p.OW + 3) / 4;
  uint owq = i % qw, rest = i / qw;
  uint oh = rest % p.OH;
  rest /= p.OH;
  uint oc = rest % p.OC, n = rest / p.OC;
  uint c = oc / p.mult;
  uint ow0 = owq * 4;
  float b = p.has_bias != 0 ? float(bias[oc]) : 0.0;
  vec4 acc = vec4(b);
  for (uint kh = 0; kh < p.KH; ++kh) {
    int ih = int(oh * p.sh + kh * p.dh) - int(p.ph);
    if (ih < 0 || ih >= int(p.H)) continue;
    int row = int(((n * p.C + c) * p.H + uint(ih)) * p.W);
    for (uint kw = 0; kw < p.KW; ++kw) {
      float wv = float(w[(oc * p.KH + kh) * p.KW + kw]);
      int iw0 = int(ow0 * p.sw + kw * p.dw) - int(p.pw);
      int start = row + iw0;
      int q = start >= 0 ? start / 4 : -((3 - start) / 4);  // floor(start / 4)
      int r = start - 4 * q;
      vec4 t0 = texelFetch(X, clamp(q, 0, int(p.last_texel)));
      vec4 t1 = texelFetch(X, clamp(q + 1, 0, int(p.last_texel)));
      vec4 t2 = texelFetch(X, clamp(q + 2, 0, int(p.last_texel)));
      float e[12] = float[12](t0.x, t0.y, t0.z, t0.w, t1.x, t1.y, t1.z, t1.w, t2.x, t2.y, t2.z, t2.w);
      for (int j = 0; j < 4; ++j) {
        int iw = iw0 + j * int(p.sw);
        float v = iw >= 0 && iw < int(p.W) ? e[r + j * int(p.sw)] : 0.0;
        acc[j] += v * wv;
      }
    }
  }
  uint out_row = ((n * p.OC + oc) * p.OH + oh) * p.OW;
  for (uint j = 0; j < 4 && ow0 + j < p.OW; ++j) {
    uint at = out_row + ow0 + j;
    float v = acc[j];
    if (HAS_RES != 0) v += float(res[at]);
    y[at] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
  }
}
