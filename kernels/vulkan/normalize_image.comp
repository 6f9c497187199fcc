// NormalizeImage (ai.porta): u8 image to f32 NCHW, one invocation per output element of a
// window of whole output planes [p0, p0 + n / HW) (a plane is one (image, channel) pair):
//   y[n, c, h, w] = x * a[c] + b[c],  a = 1 / (255 std[c]), b = -mean[c] / std[c]
// NCHW: the input window holds the same planes. NHWC (specialization constant 1): the input
// window holds whole images from img0 on, read as [.., H*W, C]. The per-channel constants
// travel as push constants (at most 12 channels; the launcher declines more).
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : require

layout(constant_id = 1) const int NHWC = 0;
layout(std430, binding = 0) readonly buffer Src { uint8_t src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant, std430) uniform Params {
  uint n;     // elements of this window
  uint C;
  uint HW;
  uint p0;    // first output plane of the window
  uint img0;  // first image of the input window (NHWC)
  float a[12];
  float b[12];
} p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint hw = i % p.HW, plane = p.p0 + i / p.HW;
  uint c = plane % p.C;
  uint from = NHWC != 0 ? ((plane / p.C - p.img0) * p.HW + hw) * p.C + c : i;
  dst[i] = float(uint(src[from])) * p.a[c] + p.b[c];
}
