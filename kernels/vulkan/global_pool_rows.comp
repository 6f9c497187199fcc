// variants: f32 f16
// GlobalAveragePool / GlobalMaxPool on CPU-like devices (pool.cpp, implementation "rows"): one
// invocation per (n, c) plane walks it alone: no barriers and no workgroup reduction, which on
// lavapipe cost more than the plane itself. The mean sums deviations from the plane's first
// element with Kahan compensation in fp32; the max propagates NaN.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int MAX = 0;
layout(std430, binding = 0) readonly buffer X { STORAGE x[]; };
layout(std430, binding = 1) writeonly buffer Y { STORAGE y[]; };
layout(push_constant) uniform Params { uint rows; uint len; } p;

void main() {
  uint row = global_index();
  if (row >= p.rows) return;
  uint base = row * p.len;
  if (MAX != 0) {
    float m = -1.0 / 0.0;
    bool nan = false;
    for (uint i = 0; i < p.len; ++i) {
      float v = float(x[base + i]);
      nan = nan || isnan(v);
      m = max(m, v);
    }
    y[row] = STORAGE(nan ? 0.0 / 0.0 : m);
  } else {
    // Deviations from the plane's first element, Kahan-compensated (a compiler may drop the
    // compensation; the shift keeps a plane whose mean is large against its spread exact enough).
    float x0 = p.len > 0 ? float(x[base]) : 0.0;
    float sum = 0.0, comp = 0.0;
    for (uint i = 0; i < p.len; ++i) {
      float v = (float(x[base + i]) - x0) - comp;
      float t = sum + v;
      comp = (t - sum) - v;
      sum = t;
    }
    y[row] = STORAGE(x0 + sum / float(p.len));
  }
}
