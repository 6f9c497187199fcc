// variants: f32 f16
// The arithmetic-peak probe (Backend::measure_fma_gflops; backends/fma_probe.hpp): every
// invocation runs 8 independent 4-wide fma chains x <- fma(x, one, step) for p.iters steps in
// the variant's arithmetic (f32, or f16 where shaderFloat16 holds), then writes the sum of its
// 32 final values (in f32, exact) for the host to check. No memory traffic inside the loop, and
// one loop only: a driver that caps loop back-edges (lavapipe) is given p.iters below its cap.
#version 450
#include "common.glsl"

#ifdef PORTA_F16
#define T float16_t
#define V f16vec4
#else
#define T float
#define V vec4
#endif

layout(std430, binding = 0) writeonly buffer Out { float sums[]; };
layout(push_constant) uniform Params { uint iters; float one; float step; float start_unit; } p;

// Chain c starts at (4c + lane) * start_unit.
V start(int c) { return V(T(4 * c), T(4 * c + 1), T(4 * c + 2), T(4 * c + 3)) * T(p.start_unit); }

void main() {
  const V a = V(T(p.one)), b = V(T(p.step));
  V x0 = start(0), x1 = start(1), x2 = start(2), x3 = start(3);
  V x4 = start(4), x5 = start(5), x6 = start(6), x7 = start(7);
  for (uint i = 0u; i < p.iters; ++i) {
    x0 = fma(x0, a, b); x1 = fma(x1, a, b); x2 = fma(x2, a, b); x3 = fma(x3, a, b);
    x4 = fma(x4, a, b); x5 = fma(x5, a, b); x6 = fma(x6, a, b); x7 = fma(x7, a, b);
  }
  vec4 s = vec4(x0) + vec4(x1) + vec4(x2) + vec4(x3) + vec4(x4) + vec4(x5) + vec4(x6) + vec4(x7);
  sums[global_index()] = s.x + s.y + s.z + s.w;
}
