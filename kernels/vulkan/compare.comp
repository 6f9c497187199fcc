// variants: f32 f16 i32 i64 i8 u8 b8
// Comparisons and logic with NumPy broadcasting, writing bool (one byte, 0 or 1). OP
// (specialization constant 1): 0 Equal, 1 Less, 2 Greater, 3 LessOrEqual, 4 GreaterOrEqual,
// 5 And, 6 Or, 7 Xor, 8 Not (a only). The variant is the operands' element type
// (element.glsl); b8 reads bool operands as u8.
#version 450
#if defined(PORTA_B8)
#define PORTA_U8 1
#endif
#include "common.glsl"
#include "element.glsl"
#extension GL_EXT_shader_8bit_storage : require

layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 1) readonly buffer B { ELEM b[]; };
layout(std430, binding = 2) writeonly buffer C { uint8_t c[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint shape[6];
  uint stride_a[6];
  uint stride_b[6];
} p;

bool apply(VALUE x, VALUE y) {
  const VALUE zero = VALUE(0);
  switch (OP) {
    case 0: return x == y;
    case 1: return x < y;
    case 2: return x > y;
    case 3: return x <= y;
    case 4: return x >= y;
    case 5: return x != zero && y != zero;
    case 6: return x != zero || y != zero;
    case 7: return (x != zero) != (y != zero);
    case 8: return x == zero;
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
