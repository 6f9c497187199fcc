// variants: f32 f16
// RmsNorm (ai.porta): one workgroup per row of the input viewed as [rows, D] (contiguous rows):
//   y = x * inversesqrt(mean(x^2) + epsilon) * scale
// The sum of squares is accumulated in fp32 whatever the storage type.
#version 450
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) readonly buffer Scale { STORAGE scale[]; };
layout(std430, binding = 2) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params { uint rows; uint D; float epsilon; } p;

void main() {
  uint row = group_index();
  if (row >= p.rows) return;  // uniform per workgroup
  uint base = row * p.D;
  uint t = gl_LocalInvocationIndex, step = gl_WorkGroupSize.x;
  float sum_sq = 0.0;
  for (uint j = t; j < p.D; j += step) {
    float v = float(src[base + j]);
    sum_sq += v * v;
  }
  float inv_rms = inversesqrt(workgroup_sum(sum_sq) / float(p.D) + p.epsilon);
  for (uint j = t; j < p.D; j += step) dst[base + j] = STORAGE(float(src[base + j]) * inv_rms * float(scale[j]));
}
