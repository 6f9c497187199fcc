// variants: f32 f16
// RmsNorm (ai.porta) on CPU-like devices (rms_norm.cpp, implementation "rows"): one invocation
// per row of D elements (D a multiple of 4), the row and the scale read as vec4 texels; the
// mean of squares in fp32 (four interleaved partial sums), then
// y = x * inversesqrt(mean + epsilon) * scale written as vec4s. No barriers, where rms_norm.comp's
// workgroup reduction splits lavapipe's execution at each one.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;
layout(binding = 1) uniform samplerBuffer Scale;
layout(std430, binding = 2) writeonly buffer Y { STORAGE4 y[]; };
layout(push_constant) uniform Params { uint rows; uint D4; float epsilon; } p;

void main() {
  uint row = global_index();
  if (row >= p.rows) return;
  uint base = row * p.D4;
  vec4 q4 = vec4(0.0);
  for (uint i = 0; i < p.D4; ++i) {
    vec4 v = texelFetch(X, int(base + i));
    q4 += v * v;
  }
  float inv_rms = inversesqrt(((q4.x + q4.y) + (q4.z + q4.w)) / float(p.D4 * 4) + p.epsilon);
  for (uint i = 0; i < p.D4; ++i) y[base + i] = STORAGE4(texelFetch(X, int(base + i)) * inv_rms * texelFetch(Scale, int(i)));
}
