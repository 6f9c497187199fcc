// variants: f32 f16
// LayerNormalization on CPU-like devices (norms.cpp, implementation "rows"): one invocation per
// row of R elements (R a multiple of 4), the row, scale and bias read as vec4 texels; mean, then
// the mean squared deviation (two passes, fp32, four interleaved compensated sums), then
// y = (x - mean) / sqrt(var + epsilon) * scale + bias written as vec4s. No barriers.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;
layout(binding = 1) uniform samplerBuffer Scale;
layout(binding = 2) uniform samplerBuffer Bias;
layout(std430, binding = 3) writeonly buffer Y { STORAGE4 y[]; };
layout(push_constant) uniform Params { uint rows; uint R4; float epsilon; uint has_bias; } p;

void main() {
  uint row = global_index();
  if (row >= p.rows) return;
  uint base = row * p.R4;
  float n = float(p.R4 * 4);
  // Sums of deviations from the row's first element, Kahan-compensated in each of the four
  // lanes: `precise` keeps the compiler from simplifying (t - s) - v to 0, without which a row
  // whose first element lies far from its mean drifts (the running sum grows with the row).
  float x0 = texelFetch(X, int(base)).x;
  precise vec4 s4 = vec4(0.0), c4 = vec4(0.0);
  for (uint i = 0; i < p.R4; ++i) {
    precise vec4 v = (texelFetch(X, int(base + i)) - x0) - c4;
    precise vec4 t = s4 + v;
    c4 = (t - s4) - v;
    s4 = t;
  }
  float mean = x0 + ((s4.x + s4.y) + (s4.z + s4.w)) / n;
  precise vec4 q4 = vec4(0.0), e4 = vec4(0.0);
  for (uint i = 0; i < p.R4; ++i) {
    vec4 d = texelFetch(X, int(base + i)) - mean;
    precise vec4 v = d * d - e4;
    precise vec4 t = q4 + v;
    e4 = (t - q4) - v;
    q4 = t;
  }
  float inv_std = inversesqrt(((q4.x + q4.y) + (q4.z + q4.w)) / n + p.epsilon);
  for (uint i = 0; i < p.R4; ++i) {
    vec4 v = (texelFetch(X, int(base + i)) - mean) * inv_std * texelFetch(Scale, int(i));
    if (p.has_bias != 0) v += texelFetch(Bias, int(i));
    y[base + i] = STORAGE4(v);
  }
}
