// variants: f32 f16
// BatchNormalization (inference): y = Act((x - mean[c]) * scale[c] / sqrt(var[c] + epsilon) + b[c])
// with c = (i / spatial) % C over an [N, C, spatial] input; Act the activation graph fusion
// folded into the node (activation.glsl; none by default).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int ACT = 0;
layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) readonly buffer Scale { STORAGE scale[]; };
layout(std430, binding = 2) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 3) readonly buffer Mean { STORAGE mean[]; };
layout(std430, binding = 4) readonly buffer Var { STORAGE variance[]; };
layout(std430, binding = 5) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params { uint n; uint C; uint spatial; float epsilon; float act_alpha, act_beta; } p;

#include "activation.glsl"

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint c = (i / p.spatial) % p.C;
  float inv = inversesqrt(float(variance[c]) + p.epsilon);
  float v = (float(src[i]) - float(mean[c])) * inv * float(scale[c]) + float(bias[c]);
  dst[i] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
}
