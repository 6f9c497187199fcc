// variants: f32 f16
// Resize of the last two axes of [planes, rows, cols] (resize.cpp, implementation "planes"):
// each invocation computes 4 consecutive outputs of one output row, TY row taps times TX column
// taps, all unrolled (specialization constants). The host gives one table per axis,
// (source offset, weight) per output coordinate and tap, offsets already multiplied by the
// axis's input stride, an axis left as it is one tap of weight 1; the column table is padded
// with zero-weight taps of offset 0 to whole quads, so the 4 outputs' column taps are TX
// 4-entry texels. Every read is a texel fetch (on lavapipe a vectorized gather, where a
// storage-buffer load is a scalar loop over the lanes).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int TY = 2;
layout(constant_id = 2) const int TX = 2;
layout(constant_id = 3) const int SMALL = 0;
layout(binding = 0) uniform samplerBuffer X;          // one element per texel
layout(binding = 1) uniform usamplerBuffer RowIndex;  // one entry per texel
layout(binding = 2) uniform samplerBuffer RowWeight;
layout(binding = 3) uniform usamplerBuffer ColIndex;  // 4 entries per texel
layout(binding = 4) uniform samplerBuffer ColWeight;
layout(std430, binding = 5) writeonly buffer Y { STORAGE y[]; };
layout(push_constant) uniform Params {
  uint total;         // planes * OH * quads
  uint quads;         // ceil(OW / 4)
  uint OH, OW;
  uint plane_stride;  // input elements between planes
} p;

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint rest = dv(i, p.quads), q = i - rest * p.quads;
  uint plane = dv(rest, p.OH), oy = rest - plane * p.OH;
  uvec4 ci[TX];
  vec4 cw[TX];
  for (int k = 0; k < TX; ++k) {
    ci[k] = texelFetch(ColIndex, int(q) * TX + k);
    cw[k] = texelFetch(ColWeight, int(q) * TX + k);
  }
  vec4 acc = vec4(0.0);
  for (int ty = 0; ty < TY; ++ty) {
    int re = int(oy) * TY + ty;
    uint row = plane * p.plane_stride + texelFetch(RowIndex, re).x;
    float wy = texelFetch(RowWeight, re).x;
    for (int j = 0; j < 4; ++j) {
      float sum = 0.0;
      for (int tx = 0; tx < TX; ++tx) {
        int e = j * TX + tx;
        sum += cw[e / 4][e % 4] * texelFetch(X, int(row + ci[e / 4][e % 4])).x;
      }
      acc[j] += wy * sum;
    }
  }
  uint out_row = rest * p.OW, ox0 = q * 4u;
  for (uint j = 0u; j < 4u && ox0 + j < p.OW; ++j) y[out_row + ox0 + j] = STORAGE(acc[j]);
}
