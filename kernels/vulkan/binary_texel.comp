// variants: f32 f16
// Float binary ops on CPU-like devices (elementwise.cpp, implementation "texel") for operands
// of one shape, one of them a single element (SCALAR: 1 = a, 2 = b), one of them repeating
// along the leading axes of the other (3 = b, 4 = a: a bias over the last axes, its size a
// multiple of 4, `period` texels), or one element of it per `period` texels of the other
// (5 = b, 6 = a: a per-channel scale over the spatial axes): each invocation reads
// one vec4 texel of each operand and writes one vec4 (element by element for the texel that
// runs past n, through the scalar view of the output).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;
layout(constant_id = 2) const int SCALAR = 0;
layout(binding = 0) uniform samplerBuffer A;
layout(binding = 1) uniform samplerBuffer B;
layout(std430, binding = 2) writeonly buffer C4 { STORAGE4 c4[]; };
layout(std430, binding = 3) writeonly buffer C { STORAGE c[]; };
layout(push_constant) uniform Params { uint n; uint period; } p;

#include "binary_float.glsl"

void main() {
  uint i = global_index();
  if (i * 4 >= p.n) return;
  uint block = i / p.period;  // modes 5 and 6: the small operand's element
  vec4 a = SCALAR == 1   ? vec4(texelFetch(A, 0).x)
           : SCALAR == 6 ? vec4(texelFetch(A, int(block >> 2))[block & 3])
                         : texelFetch(A, int(SCALAR == 4 ? i % p.period : i));
  vec4 b = SCALAR == 2   ? vec4(texelFetch(B, 0).x)
           : SCALAR == 5 ? vec4(texelFetch(B, int(block >> 2))[block & 3])
                         : texelFetch(B, int(SCALAR == 3 ? i % p.period : i));
  vec4 y;
  for (int j = 0; j < 4; ++j) y[j] = apply(a[j], b[j]);
  if (i * 4 + 4 <= p.n) {
    c4[i] = STORAGE4(y);
  } else {
    for (uint j = 0; i * 4 + j < p.n; ++j) c[i * 4 + j] = STORAGE(y[j]);
  }
}
