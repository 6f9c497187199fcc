// Measures how many loop iterations one invocation may run before the driver ends its loops.
// Some drivers cap them: Mesa's llvmpipe (lavapipe) shares one counter of 65535 back-edges
// between every loop of a shader invocation and silently leaves each loop once it runs out,
// so a kernel that iterates more computes a wrong result without any error. The context runs
// this once per device (Context::measure_loop_limit) and kernels size their work to the figure.
// data[0..3] are zeros; the load keeps the compiler from folding the loop into its trip count.
// data[4] receives the number of iterations that ran (p.n when the driver has no cap).
#version 450
#include "common.glsl"

layout(std430, binding = 0) buffer Data { uint data[]; };
layout(push_constant) uniform Params { uint n; } p;

void main() {
  uint count = 0u;
  for (uint i = 0u; i < p.n; ++i) {
    if (data[i & 3u] != 0u) break;
    count += 1u;
  }
  data[4] = count;
}
