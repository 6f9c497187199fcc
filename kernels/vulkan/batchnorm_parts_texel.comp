// variants: f32 f16
// BatchNormalization (inference) of a channel Concat's inputs on CPU-like devices (norms.cpp,
// implementation "texel" with `porta_concat`: the session's concat_into_batch_norm gave it the
// Concat's inputs as the parts of X): up to 8 parts per dispatch, each normalized straight into
// its channels of Y, so the joined X is never written. Along Y's rows (one per image: channels
// x spatial) the parts this dispatch covers lie side by side; the spatial size is a multiple of
// 4, so a texel never straddles two parts or two channels. Each invocation reads one vec4 texel
// of its part (on lavapipe a vectorized gather) and stores one vec4; as batchnorm_texel.comp.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int ACT = 0;
layout(constant_id = 2) const int SMALL = 0;  // every index below 2^21: div21 for '/'
layout(binding = 0) uniform samplerBuffer src0;
layout(binding = 1) uniform samplerBuffer src1;
layout(binding = 2) uniform samplerBuffer src2;
layout(binding = 3) uniform samplerBuffer src3;
layout(binding = 4) uniform samplerBuffer src4;
layout(binding = 5) uniform samplerBuffer src5;
layout(binding = 6) uniform samplerBuffer src6;
layout(binding = 7) uniform samplerBuffer src7;
layout(std430, binding = 8) readonly buffer Scale { STORAGE scale[]; };
layout(std430, binding = 9) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 10) readonly buffer Mean { STORAGE mean[]; };
layout(std430, binding = 11) readonly buffer Var { STORAGE variance[]; };
layout(std430, binding = 12) writeonly buffer Dst { STORAGE4 dst[]; };
layout(push_constant) uniform Params {
  uint n;              // texels this dispatch writes
  uint group_quads;    // texels of one row of Y that its parts cover
  uint row_quads;      // texels of one row of Y
  uint first_quad;     // where in a row the first of its parts starts
  uint spatial_quads;  // texels of one channel
  float epsilon;
  float act_alpha, act_beta;
  uint ends[8];        // per part: the end of its texels within the group's share of a row
  uint part_quads[8];  // per part: its input's texels per row
} p;

#include "activation.glsl"

uint dv(uint a, uint d) { return SMALL != 0 ? div21(a, d) : a / d; }

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint outer = dv(i, p.group_quads), r = i - outer * p.group_quads;
  uint k = 0u, start = 0u;
  while (k < 7u && r >= p.ends[k]) start = p.ends[k++];
  int at = int(outer * p.part_quads[k] + (r - start));
  vec4 x;
  switch (k) {
    case 0u: x = texelFetch(src0, at); break;
    case 1u: x = texelFetch(src1, at); break;
    case 2u: x = texelFetch(src2, at); break;
    case 3u: x = texelFetch(src3, at); break;
    case 4u: x = texelFetch(src4, at); break;
    case 5u: x = texelFetch(src5, at); break;
    case 6u: x = texelFetch(src6, at); break;
    default: x = texelFetch(src7, at); break;
  }
  uint q = p.first_quad + r;  // texel within Y's row
  uint c = dv(q, p.spatial_quads);
  float inv = inversesqrt(float(variance[c]) + p.epsilon);
  vec4 v = (x - float(mean[c])) * inv * float(scale[c]) + float(bias[c]);
  for (int j = 0; j < 4; ++j) v[j] = fused_activation(v[j], p.act_alpha, p.act_beta);
  dst[outer * p.row_quads + q] = STORAGE4(v);
}
