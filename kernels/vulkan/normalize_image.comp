// NormalizeImage (ai.porta): u8 image to f32 NCHW, one invocation per output element:
//   y[n, c, h, w] = x * a[c] + b[c],  a = 1 / (255 std[c]), b = -mean[c] / std[c]
// NHWC (specialization constant 1) reads X as [N, H, W, C]. The per-channel constants travel
// as push constants (at most kMaxChannels = 12 channels; the launcher declines more).
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : require

layout(constant_id = 1) const int NHWC = 0;
layout(std430, binding = 0) readonly buffer Src { uint8_t src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant, std430) uniform Params {
  uint n;
  uint C;
  uint HW;
  float a[12];
  float b[12];
} p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint hw = i % p.HW, nc = i / p.HW;
  uint c = nc % p.C, n = nc / p.C;
  uint from = NHWC != 0 ? (n * p.HW + hw) * p.C + c : i;
  dst[i] = float(uint(src[from])) * p.a[c] + p.b[c];
}
