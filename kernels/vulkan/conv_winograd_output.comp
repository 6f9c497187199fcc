// variants: f32 f16
// Conv "winograd" (kernels/vulkan/conv.cpp): the output's transform of F(2x2, 3x3). The 16
// batches of matmul_texel.comp left M = U x V as 16 matrices (OC, T) (m[(xi * OC + o) * T + t],
// tiles numbered as in conv_winograd_input.comp); each 2x2 tile of Y is A^T m A with
//   A^T = [1, 1, 1, 0; 0, 1, -1, -1],
// then the bias, the fused residual and activation (activation.glsl), stored where the tile
// lies inside Y. Each invocation takes 4 neighbouring tiles of one row of tiles of one output
// channel: 16 vec4 texel fetches (one per matrix), and two output rows of 8 elements. With VEC
// (OW a multiple of 4) the rows leave as vec4 stores, and the residual is read as vec4s. The
// products are f32 in both variants; the f16 variant reads the bias and residual and writes Y
// in f16.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int VEC = 0;
layout(constant_id = 2) const int ACT = 0;
layout(constant_id = 3) const int HAS_RES = 0;
layout(binding = 0) uniform samplerBuffer M;
layout(std430, binding = 1) readonly buffer Bias { STORAGE bias[]; };
layout(std430, binding = 2) writeonly buffer Y { STORAGE y[]; };
layout(std430, binding = 3) readonly buffer R { STORAGE res[]; };
layout(std430, binding = 4) writeonly buffer Y4 { STORAGE4 y4[]; };  // Y again (VEC)
layout(std430, binding = 5) readonly buffer R4 { STORAGE4 res4[]; };  // R again (VEC)
layout(push_constant) uniform Params {
  uint total;  // OC x quads
  uint quads;  // quads of tiles in this chunk of images
  uint n0;     // the chunk's first image
  uint OC, OH, OW, TH, TQ;
  uint has_bias;
  float act_alpha, act_beta;
} p;

#include "activation.glsl"

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint o = i / p.quads, r = i - o * p.quads;
  uint row = r / p.TQ, q = r - row * p.TQ;
  uint n = row / p.TH, th = row - n * p.TH;
  vec4 m[16];
  for (int xi = 0; xi < 16; ++xi) m[xi] = texelFetch(M, int((xi * p.OC + o) * p.quads + r));
  // s = A^T m (2x4), then Y = s A (2x2): each a vec4 over the 4 tiles.
  vec4 s[2][4];
  for (int c = 0; c < 4; ++c) {
    s[0][c] = m[c] + m[4 + c] + m[8 + c];
    s[1][c] = m[4 + c] - m[8 + c] - m[12 + c];
  }
  float b = p.has_bias != 0u ? float(bias[o]) : 0.0;
  uint ow0 = 8 * q;
  for (int a = 0; a < 2; ++a) {
    uint oh = 2 * th + a;
    if (oh >= p.OH) break;
    vec4 y0 = s[a][0] + s[a][1] + s[a][2] + b, y1 = s[a][1] - s[a][2] - s[a][3] + b;
    float vals[8] = float[8](y0.x, y1.x, y0.y, y1.y, y0.z, y1.z, y0.w, y1.w);
    uint at = (((p.n0 + n) * p.OC + o) * p.OH + oh) * p.OW + ow0;
    if (VEC != 0) {
      for (int h = 0; h < 2; ++h) {
        if (ow0 + 4 * h >= p.OW) break;
        vec4 v = vec4(vals[4 * h], vals[4 * h + 1], vals[4 * h + 2], vals[4 * h + 3]);
        uint at4 = at / 4 + h;
        if (HAS_RES != 0) v += vec4(res4[at4]);
        for (int e = 0; e < 4; ++e) v[e] = fused_activation(v[e], p.act_alpha, p.act_beta);
        y4[at4] = STORAGE4(v);
      }
      continue;
    }
    for (int e = 0; e < 8; ++e) {
      if (ow0 + e >= p.OW) break;
      float v = vals[e];
      if (HAS_RES != 0) v += float(res[at + e]);
      y[at + e] = STORAGE(fused_activation(v, p.act_alpha, p.act_beta));
    }
  }
}
