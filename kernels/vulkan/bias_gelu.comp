// variants: f32 f16
// BiasGelu (ai.porta): y[i] = gelu(x[i] + bias[i % C]), arithmetic in fp32. TANH
// (specialization constant 1) selects PyTorch's tanh approximation over the exact erf form.
// BIAS = 0 (specialization constant 2) is Gelu: no bias is read (binding 1 is then any buffer).
// The gelu math is gelu.glsl's.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int TANH = 0;
layout(constant_id = 2) const int BIAS = 1;
layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 2) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params { uint n; uint C; } p;

#include "gelu.glsl"

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  float h = BIAS != 0 ? float(src[i]) + float(bias[i % p.C]) : float(src[i]);
  dst[i] = STORAGE(gelu(h));
}
