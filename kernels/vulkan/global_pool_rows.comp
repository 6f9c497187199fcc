// variants: f32 f16
// Reductions of contiguous rows on CPU-like devices, one invocation per row walking it alone:
// no barriers and no workgroup reduction, which on lavapipe cost more than a short row does.
// GlobalAveragePool / GlobalMaxPool (pool.cpp, implementation "rows": a row is an (n, c)
// plane) and ReduceMean / ReduceSum / ReduceMax / ReduceMin over trailing axes (reduce.cpp,
// implementation "rows"). Elements are gathered from a one-element texel view (R32F / R16F;
// lavapipe runs a storage-buffer load as a scalar loop over the lanes). OP: 0 mean, 1 max,
// 2 sum, 3 min. Mean and sum add deviations from the row's first element with Kahan
// compensation in fp32; max and min propagate NaN.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;
layout(binding = 0) uniform samplerBuffer X;
layout(std430, binding = 1) writeonly buffer Y { STORAGE y[]; };
layout(push_constant) uniform Params { uint rows; uint len; } p;

float at(uint i) { return texelFetch(X, int(i)).x; }

void main() {
  uint row = global_index();
  if (row >= p.rows) return;
  uint base = row * p.len;
  if (OP == 1 || OP == 3) {
    float m = OP == 1 ? -1.0 / 0.0 : 1.0 / 0.0;
    bool nan = false;
    for (uint i = 0; i < p.len; ++i) {
      float v = at(base + i);
      nan = nan || isnan(v);
      m = OP == 1 ? max(m, v) : min(m, v);
    }
    y[row] = STORAGE(nan ? 0.0 / 0.0 : m);
  } else {
    // Deviations from the row's first element, Kahan-compensated; `precise` keeps the compiler
    // from simplifying (t - sum) - v to 0 (lavapipe did: a row whose first element lies far
    // from its mean then drifts, the running sum growing with the row).
    float x0 = p.len > 0 ? at(base) : 0.0;
    precise float sum = 0.0, comp = 0.0;
    for (uint i = 0; i < p.len; ++i) {
      precise float v = (at(base + i) - x0) - comp;
      precise float t = sum + v;
      comp = (t - sum) - v;
      sum = t;
    }
    y[row] = STORAGE(OP == 0 ? x0 + sum / float(p.len) : x0 * float(p.len) + sum);
  }
}
