// variants: f32 f16
// SqueezeExcite (ai.porta) on vulkan, second dispatch (squeeze_excite.cpp): Y = X * S[plane],
// S the per-channel gates squeeze_excite_gate.comp wrote (fp32, one per plane n * C + c). With
// VEC4 (planes a multiple of 4) an invocation reads a vec4 texel of X and writes its 4
// elements; else one element each. SMALL: every plane index below 2^21 (div21).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int VEC4 = 0;
layout(constant_id = 2) const int SMALL = 0;
layout(binding = 0) uniform samplerBuffer X;
layout(std430, binding = 1) readonly buffer S { float s[]; };
layout(std430, binding = 2) writeonly buffer Y { STORAGE y[]; };
layout(push_constant) uniform Params {
  uint total;  // invocations: texels (VEC4) or elements
  uint per;    // invocations per plane
} p;

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint plane = SMALL != 0 ? div21(i, p.per) : i / p.per;
  float g = s[plane];
  if (VEC4 != 0) {
    vec4 v = texelFetch(X, int(i)) * g;
    uint o = i * 4u;
    y[o] = STORAGE(v.x);
    y[o + 1u] = STORAGE(v.y);
    y[o + 2u] = STORAGE(v.z);
    y[o + 3u] = STORAGE(v.w);
  } else {
    y[i] = STORAGE(texelFetch(X, int(i)).x * g);
  }
}
