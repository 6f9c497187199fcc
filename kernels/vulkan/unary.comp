// variants: f32 f16 i32 i64 i8 u8
// Elementwise unary ops, one shader: OP (specialization constant 1) picks the function; the
// variant picks the element type (element.glsl). Integer variants have Relu, Abs, Neg, Sign,
// Clip and Identity; their results wrap (Abs and Neg of the minimum are the minimum).
// dst[i] = f(src[i]) for i < n; alpha/beta are the op's scalar attributes.
#version 450
#include "common.glsl"
#include "element.glsl"

layout(constant_id = 1) const int OP = 0;
layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
#if INTEGER
// Clip's bounds as two's complement 64-bit words (low, high).
layout(push_constant) uniform Params { uint n; uint lo_low; uint lo_high; uint hi_low; uint hi_high; } p;
#else
layout(push_constant) uniform Params { uint n; float alpha; float beta; float gamma; } p;
#endif

#if INTEGER
VALUE bound(uint low, uint high) {
#if defined(PORTA_I64)
  return int64_t(uint64_t(low) | (uint64_t(high) << 32));
#else
  return VALUE(int(low));
#endif
}

VALUE apply(VALUE x) {
  switch (OP) {
    case 0: return max(x, VALUE(0));                             // Relu
    case 1: return x < VALUE(0) ? -x : x;                        // Abs
    case 2: return -x;                                           // Neg
    case 16: return x > VALUE(0) ? VALUE(1) : x < VALUE(0) ? VALUE(-1) : VALUE(0);  // Sign
    case 24: return min(max(x, bound(p.lo_low, p.lo_high)), bound(p.hi_low, p.hi_high));  // Clip
  }
  return x;
}
#else
#include "unary_float.glsl"
#endif

void main() {
  uint i = global_index();
  if (i >= p.n) return;
#if INTEGER
  dst[i] = ELEM(apply(VALUE(src[i])));
#else
  float x = float(src[i]);
  // NaN propagates for every op (ONNX/PyTorch semantics), whatever the driver's min/max do.
  dst[i] = STORAGE(isnan(x) ? x : apply(x));
#endif
}
