// variants: f32 f16
// Float unary ops on CPU-like devices (elementwise.cpp, implementation "texel"): each
// invocation reads one vec4 texel of the source (a vectorized gather on lavapipe, where
// storage-buffer loads are scalar loops over the lanes) and writes it back as one vec4; the
// texel that runs past n is written element by element through the scalar view of the output.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;
layout(binding = 0) uniform samplerBuffer src;
layout(std430, binding = 1) writeonly buffer Dst4 { STORAGE4 dst4[]; };
layout(std430, binding = 2) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params { uint n; float alpha; float beta; float gamma; } p;

#include "unary_float.glsl"

void main() {
  uint i = global_index();
  if (i * 4 >= p.n) return;
  vec4 x = texelFetch(src, int(i)), y;
  // NaN propagates for every op (ONNX/PyTorch semantics), whatever the driver's min/max do.
  for (int j = 0; j < 4; ++j) y[j] = isnan(x[j]) ? x[j] : apply(x[j]);
  if (i * 4 + 4 <= p.n) {
    dst4[i] = STORAGE4(y);
  } else {
    for (uint j = 0; i * 4 + j < p.n; ++j) dst[i * 4 + j] = STORAGE(y[j]);
  }
}
