// variants: f32 f16 b8
// Comparisons and logic with NumPy broadcasting, writing bool (one byte, 0 or 1). OP
// (specialization constant 1): 0 Equal, 1 Less, 2 Greater, 3 LessOrEqual, 4 GreaterOrEqual,
// 5 And, 6 Or, 7 Xor, 8 Not (a only). The b8 variant reads bool operands.
#version 450
#include "common.glsl"
#extension GL_EXT_shader_8bit_storage : require

#if defined(PORTA_B8)
#define IN uint8_t
#define VALUE(v) float(uint(v))
#else
#define IN STORAGE
#define VALUE(v) float(v)
#endif

layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) readonly buffer A { IN a[]; };
layout(std430, binding = 1) readonly buffer B { IN b[]; };
layout(std430, binding = 2) writeonly buffer C { uint8_t c[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint shape[6];
  uint stride_a[6];
  uint stride_b[6];
} p;

bool apply(float x, float y) {
  switch (OP) {
    case 0: return x == y;
    case 1: return x < y;
    case 2: return x > y;
    case 3: return x <= y;
    case 4: return x >= y;
    case 5: return x != 0.0 && y != 0.0;
    case 6: return x != 0.0 || y != 0.0;
    case 7: return (x != 0.0) != (y != 0.0);
    case 8: return x == 0.0;
  }
  return false;
}

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint ia = 0, ib = 0, rest = i;
  // Inner axes by division; the outermost takes what is left (no division: cheaper on
  // devices that emulate integer division, and the common same-shape case has one axis).
  for (int d = int(p.rank) - 1; d > 0; --d) {
    uint coord = rest % p.shape[d];
    rest /= p.shape[d];
    ia += coord * p.stride_a[d];
    ib += coord * p.stride_b[d];
  }
  ia += rest * p.stride_a[0];
  ib += rest * p.stride_b[0];
  c[i] = uint8_t(apply(VALUE(a[ia]), VALUE(b[ib])) ? 1u : 0u);
}
