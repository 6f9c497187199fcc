// variants: f32 f16
// Row normalisation for LayerNormalization and InstanceNormalization: the input viewed as
// [rows, R] (contiguous rows); mean and variance in fp32 (two passes, numerically stable), then
//   y = (x - mean) * inv_std * scale + bias.
// CHANNEL_AFFINE (specialization constant 1): 0 = scale/bias indexed by position in the row
// (LayerNorm), 1 = by channel row % C (InstanceNorm). STATS (constant 3): also write mean and
// 1/std per row (LayerNorm's optional outputs).
#version 450
#include "common.glsl"
#include "reduce.glsl"

layout(constant_id = 1) const int CHANNEL_AFFINE = 0;
layout(constant_id = 3) const int STATS = 0;
layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) readonly buffer Scale { STORAGE scale[]; };
layout(std430, binding = 2) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 3) writeonly buffer Dst { STORAGE dst[]; };
layout(std430, binding = 4) writeonly buffer Mean { STORAGE mean_out[]; };
layout(std430, binding = 5) writeonly buffer InvStd { STORAGE inv_std_out[]; };
layout(push_constant) uniform Params { uint rows; uint R; uint C; float epsilon; uint has_bias; } p;

void main() {
  uint row = group_index();
  if (row >= p.rows) return;  // uniform per workgroup
  uint base = row * p.R;
  uint t = gl_LocalInvocationIndex, step = gl_WorkGroupSize.x;
  float s = 0.0;
  for (uint r = t; r < p.R; r += step) s += float(src[base + r]);
  float mean = workgroup_sum(s) / float(p.R);
  float q = 0.0;
  for (uint r = t; r < p.R; r += step) {
    float d = float(src[base + r]) - mean;
    q += d * d;
  }
  float inv_std = inversesqrt(workgroup_sum(q) / float(p.R) + p.epsilon);
  for (uint r = t; r < p.R; r += step) {
    uint k = CHANNEL_AFFINE != 0 ? row % p.C : r;
    float g = float(scale[k]);
    float b = p.has_bias != 0 ? float(bias[k]) : 0.0;
    dst[base + r] = STORAGE((float(src[base + r]) - mean) * inv_std * g + b);
  }
  if (STATS != 0 && t == 0) {
    mean_out[row] = STORAGE(mean);
    inv_std_out[row] = STORAGE(inv_std);
  }
}
