// variants: f32 f16
// SqueezeExcite (ai.porta) on vulkan (squeeze_excite.cpp): the gate of every channel of one
// image per workgroup,
//   m[c] = mean of the image's plane c;  h[r] = ACT(B1[r] + W1[r, :] . m);  s[c] = GATE(B2[c] + W2[c, :] . h)
// With SCALE the invocation that computes s[c] also writes plane c of Y = X * s[c] (the whole
// block in one dispatch, for small images); else s goes to S (n * C + c, fp32) for
// squeeze_excite_scale.comp. Invocations take channels (then hidden units, then channels
// again) in turn; the means and the hidden values stay in shared memory, two barriers apart.
// A plane's sum adds deviations from its first element, four Kahan-compensated lanes of vec4
// texels where planes are a multiple of 4 (VEC4), else one element per texel; the sums are
// `precise`, else the compiler may drop the compensation. Weights are read as vec4 texels
// where their rows are a multiple of 4 (W1V: C, W2V: R). Accumulation in fp32.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int ACT = 0;   // the hidden activation (FusedActivation::Kind)
layout(constant_id = 2) const int GATE = 0;  // the gate
layout(constant_id = 3) const int VEC4 = 0;
layout(constant_id = 4) const int W1V = 0;
layout(constant_id = 5) const int W2V = 0;
layout(constant_id = 6) const int SHARED_C = 64;  // >= C, a multiple of 4
layout(constant_id = 7) const int SHARED_R = 64;  // >= R, a multiple of 4
layout(constant_id = 8) const int SCALE = 0;
layout(binding = 0) uniform samplerBuffer X;   // VEC4: RGBA texels, else one element each
layout(binding = 1) uniform samplerBuffer W1;  // R x C (W1V: RGBA texels)
layout(binding = 2) uniform samplerBuffer B1;  // R, or a stand-in when has_b1 = 0
layout(binding = 3) uniform samplerBuffer W2;  // C x R (W2V: RGBA texels)
layout(binding = 4) uniform samplerBuffer B2;  // C, or a stand-in when has_b2 = 0
layout(std430, binding = 5) writeonly buffer S { float s[]; };  // without SCALE
layout(std430, binding = 6) writeonly buffer Y { STORAGE y[]; };  // with SCALE
layout(push_constant) uniform Params {
  uint C, R, P;  // channels, hidden units, positions per plane
  uint has_b1, has_b2;
  float act_alpha, act_beta, gate_alpha, gate_beta;
} p;

#include "activation.glsl"

// As vec4s: one shared load per texel of weights (lavapipe runs each as a gather).
shared vec4 means[SHARED_C / 4];
shared vec4 hidden[SHARED_R / 4];

float plane_mean(uint plane) {
  if (VEC4 != 0) {
    uint n4 = p.P / 4u, base = plane * n4;
    vec4 x0 = vec4(texelFetch(X, int(base)).x);
    precise vec4 sum = vec4(0.0), comp = vec4(0.0);
    for (uint i = 0u; i < n4; ++i) {
      precise vec4 v = (texelFetch(X, int(base + i)) - x0) - comp;
      precise vec4 t = sum + v;
      comp = (t - sum) - v;
      sum = t;
    }
    return x0.x + ((sum.x + sum.y) + (sum.z + sum.w)) / float(p.P);
  }
  uint base = plane * p.P;
  float x0 = texelFetch(X, int(base)).x;
  precise float sum = 0.0, comp = 0.0;
  for (uint i = 0u; i < p.P; ++i) {
    precise float v = (texelFetch(X, int(base + i)).x - x0) - comp;
    precise float t = sum + v;
    comp = (t - sum) - v;
    sum = t;
  }
  return x0 + sum / float(p.P);
}

// Y's plane `plane` = X's times g.
void scale_plane(uint plane, float g) {
  if (VEC4 != 0) {
    uint n4 = p.P / 4u, base = plane * n4;
    for (uint i = 0u; i < n4; ++i) {
      vec4 v = texelFetch(X, int(base + i)) * g;
      uint o = (base + i) * 4u;
      y[o] = STORAGE(v.x);
      y[o + 1u] = STORAGE(v.y);
      y[o + 2u] = STORAGE(v.z);
      y[o + 3u] = STORAGE(v.w);
    }
  } else {
    uint base = plane * p.P;
    for (uint i = 0u; i < p.P; ++i) y[base + i] = STORAGE(texelFetch(X, int(base + i)).x * g);
  }
}

void main() {
  uint n = group_index();
  uint lid = gl_LocalInvocationID.x, L = gl_WorkGroupSize.x;
  for (uint c = lid; c < p.C; c += L) means[c >> 2][c & 3u] = plane_mean(n * p.C + c);
  barrier();
  for (uint r = lid; r < p.R; r += L) {
    float acc = p.has_b1 != 0u ? texelFetch(B1, int(r)).x : 0.0;
    if (W1V != 0) {
      uint row = r * (p.C / 4u);
      for (uint c4 = 0u; c4 < p.C / 4u; ++c4) acc += dot(texelFetch(W1, int(row + c4)), means[c4]);
    } else {
      for (uint c = 0u; c < p.C; ++c) acc += texelFetch(W1, int(r * p.C + c)).x * means[c >> 2][c & 3u];
    }
    hidden[r >> 2][r & 3u] = activation_of(ACT, acc, p.act_alpha, p.act_beta);
  }
  barrier();
  for (uint c = lid; c < p.C; c += L) {
    float acc = p.has_b2 != 0u ? texelFetch(B2, int(c)).x : 0.0;
    if (W2V != 0) {
      uint row = c * (p.R / 4u);
      for (uint r4 = 0u; r4 < p.R / 4u; ++r4) acc += dot(texelFetch(W2, int(row + r4)), hidden[r4]);
    } else {
      for (uint r = 0u; r < p.R; ++r) acc += texelFetch(W2, int(c * p.R + r)).x * hidden[r >> 2][r & 3u];
    }
    float g = activation_of(GATE, acc, p.gate_alpha, p.gate_beta);
    if (SCALE != 0) scale_plane(n * p.C + c, g);
    else s[n * p.C + c] = g;
  }
}
