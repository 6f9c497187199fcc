// variants: f32 f16
// BatchNormalization (inference) on CPU-like devices (norms.cpp, implementation "texel"), as
// batchnorm.comp computes it, 4 elements of one channel per invocation (spatial a multiple of
// 4): x read as one vec4 texel (on lavapipe a vectorized gather, where a storage-buffer load is
// a scalar loop over the lanes) and written as one vec4; indices through div21 below 2^21.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int ACT = 0;
layout(constant_id = 2) const int SMALL = 0;
layout(binding = 0) uniform samplerBuffer Src;
layout(std430, binding = 1) readonly buffer Scale { STORAGE scale[]; };
layout(std430, binding = 2) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 3) readonly buffer Mean { STORAGE mean[]; };
layout(std430, binding = 4) readonly buffer Var { STORAGE variance[]; };
layout(std430, binding = 5) writeonly buffer Dst { STORAGE4 dst[]; };
layout(push_constant) uniform Params { uint quads; uint C; uint spatial_quads; float epsilon; float act_alpha, act_beta; } p;

#include "activation.glsl"

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.quads) return;
  uint plane = dv(i, p.spatial_quads);  // n * C + c
  uint c = plane - dv(plane, p.C) * p.C;
  float inv = inversesqrt(float(variance[c]) + p.epsilon);
  vec4 v = (texelFetch(Src, int(i)) - float(mean[c])) * inv * float(scale[c]) + float(bias[c]);
  for (int j = 0; j < 4; ++j) v[j] = fused_activation(v[j], p.act_alpha, p.act_beta);
  dst[i] = STORAGE4(v);
}
