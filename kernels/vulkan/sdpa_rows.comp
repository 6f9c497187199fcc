// ScaledDotProductAttention (ai.porta) on CPU-like devices (scaled_dot_product_attention.cpp,
// implementation "rows"): one invocation per query row, no shared memory and no barriers,
// which lavapipe runs as splits of the workgroup. The row's Q and its Dv accumulators stay in
// registers (D4 and DV4 vec4s, specialization constants); each key is one streaming-softmax
// step: its score from D4 vec4 texel fetches of K, the running maximum m and sum l (the
// accumulators rescaled only when m grows), then Dv4 fetches of V added with the key's weight.
// Q, K and V are RGBA32F texel views (D and Dv multiples of 4) read at strides in texels per
// (b, h, row) axis, so each may be a strided view of a wider tensor (the head splits of a
// packed q/k/v projection, read where they lie); the Mask is read as one-element texels at
// mask_stride (0 on broadcast axes); Dst is written at strides too (the head merge's
// permuted layout, written in place). fp32 throughout.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int CAUSAL = 0;
layout(constant_id = 2) const int HAS_MASK = 0;
layout(constant_id = 3) const int D4 = 16;   // D / 4
layout(constant_id = 4) const int DV4 = 16;  // Dv / 4
layout(binding = 0) uniform samplerBuffer Q;
layout(binding = 1) uniform samplerBuffer K;
layout(binding = 2) uniform samplerBuffer V;
layout(binding = 3) uniform samplerBuffer Mask;  // R32F (Q stands in without a mask)
layout(std430, binding = 4) writeonly buffer Dst { vec4 dst[]; };
layout(push_constant, std430) uniform Params {
  uint rows;  // B * H * Sq
  uint H, Sq, Skv;
  float scale;
  uint mask_stride[4];
  uint q_stride[3], k_stride[3], v_stride[3];  // texels per b, h and row (query or key)
  uint y_stride[3];                             // vec4s per b, h and query row of Dst
} p;

void main() {
  uint row = global_index();
  if (row >= p.rows) return;
  uint bh = row / p.Sq, i = row % p.Sq;
  uint b = bh / p.H, h = bh % p.H;
  uint qb = b * p.q_stride[0] + h * p.q_stride[1] + i * p.q_stride[2];
  uint kh = b * p.k_stride[0] + h * p.k_stride[1], vh = b * p.v_stride[0] + h * p.v_stride[1];
  vec4 q[D4];
  for (int t = 0; t < D4; ++t) q[t] = texelFetch(Q, int(qb + uint(t)));
  vec4 acc[DV4];
  for (int t = 0; t < DV4; ++t) acc[t] = vec4(0.0);
  const float NEG_INF = -1.0 / 0.0;
  float m = NEG_INF, l = 0.0;
  uint keys = CAUSAL != 0 ? min(p.Skv, i + 1u) : p.Skv;
  uint mask_row = b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2];
  for (uint j = 0u; j < keys; ++j) {
    uint kb = kh + j * p.k_stride[2];
    vec4 d4 = vec4(0.0);
    for (int t = 0; t < D4; ++t) d4 += q[t] * texelFetch(K, int(kb + uint(t)));
    float s = p.scale * ((d4.x + d4.y) + (d4.z + d4.w));
    if (HAS_MASK != 0) s += texelFetch(Mask, int(mask_row + j * p.mask_stride[3])).x;
    if (s == NEG_INF) continue;  // a hidden key: weight 0
    if (s > m) {
      float c = exp(m - s);  // 0 while m is -inf
      l *= c;
      for (int t = 0; t < DV4; ++t) acc[t] *= c;
      m = s;
    }
    float w = exp(s - m);
    l += w;
    uint vb = vh + j * p.v_stride[2];
    for (int t = 0; t < DV4; ++t) acc[t] += w * texelFetch(V, int(vb + uint(t)));
  }
  // No key at all: an empty weighted sum, 0; keys that are all hidden: NaN, as softmax gives.
  float inv = p.Skv == 0u ? 0.0 : (m == NEG_INF ? uintBitsToFloat(0x7fc00000u) : 1.0 / l);
  uint yb = b * p.y_stride[0] + h * p.y_stride[1] + i * p.y_stride[2];
  for (int t = 0; t < DV4; ++t) dst[yb + uint(t)] = acc[t] * inv;
}
