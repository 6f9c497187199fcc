// variants: b32 b16 b64 b8
// Where: out = condition ? x : y with three-way NumPy broadcasting. X/Y/out are moved as raw
// bits of their element size, so one variant per size serves every dtype.
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : require

#if defined(PORTA_B64)
#define ELEM uvec2
#elif defined(PORTA_B16)
#define ELEM float16_t
#elif defined(PORTA_B8)
#define ELEM uint8_t
#else
#define ELEM uint
#endif

layout(std430, binding = 0) readonly buffer Cond { uint8_t cond[]; };
layout(std430, binding = 1) readonly buffer X { ELEM x[]; };
layout(std430, binding = 2) readonly buffer Y { ELEM y[]; };
layout(std430, binding = 3) writeonly buffer Out { ELEM out_[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint shape[6];
  uint stride_c[6];
  uint stride_x[6];
  uint stride_y[6];
} p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint ic = 0, ix = 0, iy = 0, rest = i;
  for (int d = int(p.rank) - 1; d > 0; --d) {
    uint c = rest % p.shape[d];
    rest /= p.shape[d];
    ic += c * p.stride_c[d];
    ix += c * p.stride_x[d];
    iy += c * p.stride_y[d];
  }
  ic += rest * p.stride_c[0];
  ix += rest * p.stride_x[0];
  iy += rest * p.stride_y[0];
  out_[i] = uint(cond[ic]) != 0u ? x[ix] : y[iy];
}
