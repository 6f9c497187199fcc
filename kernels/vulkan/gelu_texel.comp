// variants: f32 f16
// BiasGelu (ai.porta) and Gelu on CPU-like devices (bias_gelu.cpp, implementation "texel"), as
// bias_gelu.comp computes them, 4 elements per invocation: read as one vec4 texel (on lavapipe a
// vectorized gather, where a storage-buffer load is a scalar loop over the lanes) and written as
// one vec4; the last partial texel element by element through Dst (the same tensor as Dst4).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int TANH = 0;
layout(constant_id = 2) const int BIAS = 1;
layout(binding = 0) uniform samplerBuffer src;
layout(std430, binding = 1) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 2) writeonly buffer Dst4 { STORAGE4 dst4[]; };
layout(std430, binding = 3) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params { uint n; uint C; } p;

#include "gelu.glsl"

void main() {
  uint i = global_index();
  if (i * 4u >= p.n) return;
  vec4 x = texelFetch(src, int(i)), y;
  uint c = BIAS != 0 ? i * 4u % p.C : 0u;
  for (int j = 0; j < 4; ++j) {
    float h = x[j];
    if (BIAS != 0) {
      h += float(bias[c]);
      if (++c == p.C) c = 0u;
    }
    y[j] = gelu(h);
  }
  if (i * 4u + 4u <= p.n) {
    dst4[i] = STORAGE4(y);
  } else {
    for (uint j = 0u; i * 4u + j < p.n; ++j) dst[i * 4u + j] = STORAGE(y[j]);
  }
}
