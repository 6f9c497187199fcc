// variants: f32 f16 i32 i64 i8 u8
// Elementwise binary ops with NumPy broadcasting, one shader: OP (specialization constant 1)
// picks the function; the variant picks the element type (element.glsl). Integer results wrap;
// integer Div truncates toward zero, x / 0 is 0 and MIN / -1 wraps to MIN (ops/binary_arith.cpp).
// The launcher passes the output shape (merged to at most 6 axes) and each input's element
// strides (0 along broadcast axes).
#version 450
#include "common.glsl"
#include "element.glsl"

layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) readonly buffer A { ELEM a[]; };
layout(std430, binding = 1) readonly buffer B { ELEM b[]; };
layout(std430, binding = 2) writeonly buffer C { ELEM c[]; };
layout(push_constant) uniform Params {
  uint n;
  uint rank;
  uint shape[6];
  uint stride_a[6];
  uint stride_b[6];
} p;

#if INTEGER
// Exact power, wrapping like repeated multiplication (squaring gives the same result modulo
// 2^bits); a negative exponent gives the truncated real result (ops/pow.cpp).
VALUE pow_int(VALUE x, VALUE e) {
  const VALUE one = VALUE(1);
  if (e < VALUE(0)) return x == one ? one : x == -one ? ((e & one) == VALUE(0) ? one : -one) : VALUE(0);
  VALUE r = one;
  for (; e > VALUE(0); e >>= 1) {
    if ((e & one) != VALUE(0)) r *= x;
    x *= x;
  }
  return r;
}

VALUE apply(VALUE x, VALUE y) {
  switch (OP) {
    case 0: return x + y;                                         // Add
    case 1: return x - y;                                         // Sub
    case 2: return x * y;                                         // Mul
    case 3: return y == VALUE(0) ? VALUE(0) : y == VALUE(-1) ? -x : x / y;  // Div
    case 4: return pow_int(x, y);                                 // Pow
    case 5: return max(x, y);                                     // Max
    case 6: return min(x, y);                                     // Min
    case 7:                                                       // Mod, fmod = 1 (dividend's sign)
    case 9: {                                                     // Mod, fmod = 0 (divisor's sign)
      if (y == VALUE(0) || y == VALUE(-1)) return VALUE(0);      // x mod 0 is 0; no MIN / -1 trap
      VALUE r = x - (x / y) * y;                                  // division truncates toward zero
      if (OP == 9 && r != VALUE(0) && ((r < VALUE(0)) != (y < VALUE(0)))) r += y;
      return r;
    }
  }
  return x;
}
#else
#include "binary_float.glsl"
#endif

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
  c[i] = ELEM(apply(VALUE(a[ia]), VALUE(b[ib])));
}
