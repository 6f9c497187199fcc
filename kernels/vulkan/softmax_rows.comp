// variants: f32 f16
// Softmax / LogSoftmax (LOG) over the innermost axis on CPU-like devices (softmax.cpp,
// implementation "rows"): one invocation per row of R elements, reading it in three passes
// (maximum, sum of exponentials, output): as vec4 texels, writing vec4s, when R is a multiple
// of 4; else (SCALAR, e.g. attention over 7x7 windows: rows of 49) as one-element texels
// (R32F / R16F), writing elements. No barriers and no workgroup reductions, which cost
// lavapipe more than short rows do. fp32 throughout (the vec4 path's sum in four interleaved
// partial sums).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int LOG = 0;
layout(constant_id = 2) const int SCALAR = 0;
layout(binding = 0) uniform samplerBuffer src;  // RGBA32F / RGBA16F, or R32F / R16F with SCALAR
layout(std430, binding = 1) writeonly buffer Dst { STORAGE4 dst[]; };
layout(std430, binding = 2) writeonly buffer Dst1 { STORAGE dst1[]; };  // the same tensor
layout(push_constant) uniform Params { uint rows; uint R4; } p;  // R4 = R / 4 (SCALAR: R)

void main() {
  uint row = global_index();
  if (row >= p.rows) return;
  if (SCALAR != 0) {
    uint base = row * p.R4;
    float m = -1.0 / 0.0;
    for (uint i = 0; i < p.R4; ++i) m = max(m, texelFetch(src, int(base + i)).x);
    float s = 0.0;
    for (uint i = 0; i < p.R4; ++i) s += exp(texelFetch(src, int(base + i)).x - m);
    float log_s = log(s);
    for (uint i = 0; i < p.R4; ++i) {
      float x = texelFetch(src, int(base + i)).x - m;
      dst1[base + i] = STORAGE(LOG != 0 ? x - log_s : exp(x) / s);
    }
    return;
  }
  uint base = row * p.R4;
  vec4 m4 = vec4(-1.0 / 0.0);
  for (uint i = 0; i < p.R4; ++i) m4 = max(m4, texelFetch(src, int(base + i)));
  float m = max(max(m4.x, m4.y), max(m4.z, m4.w));
  vec4 s4 = vec4(0.0);
  for (uint i = 0; i < p.R4; ++i) s4 += exp(texelFetch(src, int(base + i)) - m);
  float s = (s4.x + s4.y) + (s4.z + s4.w);
  float log_s = log(s);
  for (uint i = 0; i < p.R4; ++i) {
    vec4 x = texelFetch(src, int(base + i)) - m;
    dst[base + i] = STORAGE4(LOG != 0 ? x - log_s : exp(x) / s);
  }
}
