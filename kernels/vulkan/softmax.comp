// variants: f32 f16
// Softmax / LogSoftmax (LOG, specialization constant 1) along one axis, the input viewed as
// [outer, R, inner]: one workgroup per (outer, inner) row; max, sum of exponentials and the
// output in three passes over the row, all in fp32.
#version 450
#include "common.glsl"
#include "reduce.glsl"

layout(constant_id = 1) const int LOG = 0;
layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params { uint rows; uint R; uint inner; } p;

void main() {
  uint row = group_index();
  if (row >= p.rows) return;  // uniform per workgroup
  uint base = (row / p.inner) * p.R * p.inner + row % p.inner;
  uint t = gl_LocalInvocationIndex, step = gl_WorkGroupSize.x;
  float m = -1.0 / 0.0;
  for (uint r = t; r < p.R; r += step) m = max(m, float(src[base + r * p.inner]));
  m = workgroup_max(m);
  float s = 0.0;
  for (uint r = t; r < p.R; r += step) s += exp(float(src[base + r * p.inner]) - m);
  s = workgroup_sum(s);
  float log_s = log(s);
  for (uint r = t; r < p.R; r += step) {
    float x = float(src[base + r * p.inner]) - m;
    dst[base + r * p.inner] = STORAGE(LOG != 0 ? x - log_s : exp(x) / s);
  }
}
