// variants: f32
// Conv "winograd" (kernels/vulkan/conv.cpp): the input's transform of F(2x2, 3x3). The output
// is cut into 2x2 tiles, TH x TW of them per image; tile (th, tw) reads the 4x4 patch of X whose
// corner is (2 th - ph, 2 tw - pw) (zero outside X) and becomes V = B^T d B, with
//   B^T = [1, 0, -1, 0; 0, 1, 1, 0; 0, -1, 1, 0; 0, 1, 0, -1].
// Tiles are numbered t = (n * TH + th) * TWp + tw, TWp = TW rounded up to a multiple of 4 (tiles
// past TW are computed and never stored), and V is stored as 16 matrices (one per position xi),
// each (Cp, T), rows past C zero: v[(xi * Cp + c) * T + t], the B operand of
// matmul_texel.comp's 16 batches. Each invocation transforms 4 neighbouring tiles of one row of
// tiles for one channel: it reads a 4 x 10 window of X (one element per texel: a vectorized
// gather on lavapipe) and writes 16 vec4s, one per matrix.
#version 450
#include "common.glsl"

layout(binding = 0) uniform samplerBuffer X;
layout(std430, binding = 1) writeonly buffer V { vec4 v[]; };
layout(push_constant) uniform Params {
  uint total;  // Cp x quads
  uint quads;  // quads of tiles in this chunk of images: images x TH x TWp / 4
  uint n0;     // the chunk's first image
  uint C, Cp, H, W, TH, TQ;  // TQ = TWp / 4
  int ph, pw;
} p;

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint c = i / p.quads, r = i - c * p.quads;
  vec4 out_v[16];
  if (c >= p.C) {
    for (int xi = 0; xi < 16; ++xi) v[(xi * p.Cp + c) * p.quads + r] = vec4(0.0);
    return;
  }
  uint row = r / p.TQ, q = r - row * p.TQ;  // row = n * TH + th
  uint n = row / p.TH, th = row - n * p.TH;
  int ih0 = int(2 * th) - p.ph, iw0 = int(8 * q) - p.pw;
  uint plane = ((p.n0 + n) * p.C + c) * p.H;
  // d[a][s]: the vec4 over the 4 tiles of patch element (a, s).
  vec4 d[4][4];
  for (int a = 0; a < 4; ++a) {
    int ih = ih0 + a;
    bool row_in = ih >= 0 && ih < int(p.H);
    int base = int(plane + uint(clamp(ih, 0, int(p.H) - 1))) * int(p.W);
    float x[10];
    for (int s = 0; s < 10; ++s) {
      int iw = iw0 + s;
      float val = texelFetch(X, base + clamp(iw, 0, int(p.W) - 1)).x;
      x[s] = row_in && iw >= 0 && iw < int(p.W) ? val : 0.0;
    }
    for (int s = 0; s < 4; ++s) d[a][s] = vec4(x[s], x[s + 2], x[s + 4], x[s + 6]);
  }
  // t = B^T d, then V = t B.
  for (int s = 0; s < 4; ++s) {
    vec4 t0 = d[0][s] - d[2][s], t1 = d[1][s] + d[2][s], t2 = d[2][s] - d[1][s], t3 = d[1][s] - d[3][s];
    d[0][s] = t0;
    d[1][s] = t1;
    d[2][s] = t2;
    d[3][s] = t3;
  }
  for (int a = 0; a < 4; ++a) {
    out_v[a * 4 + 0] = d[a][0] - d[a][2];
    out_v[a * 4 + 1] = d[a][1] + d[a][2];
    out_v[a * 4 + 2] = d[a][2] - d[a][1];
    out_v[a * 4 + 3] = d[a][1] - d[a][3];
  }
  for (int xi = 0; xi < 16; ++xi) v[(xi * p.Cp + c) * p.quads + r] = out_v[xi];
}
