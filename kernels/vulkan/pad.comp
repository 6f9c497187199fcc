// variants: b32 b16 b64 b8
// Pad in edge (MODE 1) and reflect (MODE 2) modes: every output element reads the input at
// its coordinate minus the begin pad, clamped (edge) or mirrored without repeating the border
// (reflect, numpy's "reflect") per axis. Constant mode is fill.comp + copy.comp. Elements move
// as raw bits.
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : enable

#if defined(PORTA_B64)
#define ELEM uvec2
#elif defined(PORTA_B16)
#define ELEM float16_t
#elif defined(PORTA_B8)
#define ELEM uint8_t
#else
#define ELEM uint
#endif

layout(constant_id = 1) const int MODE = 1;
layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  int out_shape[6];
  int in_shape[6];
  int before[6];
} p;

int source_coordinate(int c, int n) {
  if (MODE == 1 || n == 1) return clamp(c, 0, n - 1);
  int period = 2 * (n - 1);
  c = abs(c) % period;  // reflection is symmetric around 0 with period 2(n-1)
  return c < n ? c : period - c;
}

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  int rest = int(i), s = 0, stride = 1;
  for (int k = int(p.rank) - 1; k >= 0; --k) {
    int c = k > 0 ? rest % p.out_shape[k] : rest;
    rest /= p.out_shape[k];
    s += source_coordinate(c - p.before[k], p.in_shape[k]) * stride;
    stride *= p.in_shape[k];
  }
  dst[i] = src[s];
}
