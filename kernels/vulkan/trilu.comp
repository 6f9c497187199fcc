// variants: b32 b16 b64 b8
// Trilu: every element of the [batch, rows, cols] input is copied when it lies in the kept
// triangle (UPPER, constant 1: col - row >= k; else col - row <= k) and zero bits otherwise (0
// in every dtype). Elements move as raw bits; k arrives clamped to [-rows - 1, cols + 1].
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

layout(constant_id = 1) const int UPPER = 1;
layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
layout(push_constant) uniform Params { uint n; uint rows; uint cols; int k; } p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  int d = int(i % p.cols) - int((i / p.cols) % p.rows);
  bool keep = UPPER != 0 ? d >= p.k : d <= p.k;
  dst[i] = keep ? src[i] : ELEM(0);
}
