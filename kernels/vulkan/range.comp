// variants: f32 f16 i32 i64 i8 u8
// Range: dst[i] = start + i * delta for i < n (each element computed, not a running sum, so
// errors do not accumulate). start and delta are one-element tensors on the device; the
// launcher knows n from shape inference. Integer variants wrap like the CPU kernel; float
// variants compute in fp32 with one rounding (fma).
#version 450
#include "common.glsl"
#include "element.glsl"

layout(std430, binding = 0) readonly buffer Start { ELEM start_[]; };
layout(std430, binding = 1) readonly buffer Delta { ELEM delta_[]; };
layout(std430, binding = 2) writeonly buffer Dst { ELEM dst[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
#if INTEGER
  dst[i] = ELEM(VALUE(start_[0]) + VALUE(i) * VALUE(delta_[0]));
#else
  dst[i] = ELEM(fma(float(i), float(delta_[0]), float(start_[0])));
#endif
}
