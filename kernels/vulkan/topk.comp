// variants: f32 f16 i32 i64 i8 u8
// TopK over an input viewed as [outer, n, inner], one invocation per input element: it counts
// the elements of its row that come before it in the op's order (its rank; ranks of a row are
// a permutation of 0..n-1) and, when the rank is below K, writes itself to output position
// rank. Order as opdef::topk_before: larger first (LARGEST, constant 1) or smaller first; NaN
// counts as larger than every number; equal values keep the lower index first. The counting
// loop runs at most n + 1 iterations per invocation (it stops once the rank reaches K); the
// launcher declines rows longer than the driver's loop cap allows. Indices are written as
// int64 in two 32-bit words (low, high = 0), so no shaderInt64 is needed for them.
#version 450
#include "common.glsl"
#include "element.glsl"

layout(constant_id = 1) const int LARGEST = 1;
layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Values { ELEM values[]; };
layout(std430, binding = 2) writeonly buffer Indices { uint indices[]; };
layout(push_constant) uniform Params { uint total; uint n; uint inner; uint k; } p;

bool is_nan(VALUE v) {
#if INTEGER
  return false;
#else
  return isnan(v);
#endif
}

// Whether (a, ia) comes before (b, ib) in the output.
bool before(VALUE a, uint ia, VALUE b, uint ib) {
  bool na = is_nan(a), nb = is_nan(b);
  if (na || nb) {
    if (na && nb) return ia < ib;
    return LARGEST != 0 ? na : nb;
  }
  if (a != b) return LARGEST != 0 ? a > b : a < b;
  return ia < ib;
}

void main() {
  uint i = global_index();
  if (i >= p.total) return;
  uint in_row = i % p.inner, t = i / p.inner;
  uint at = t % p.n, o = t / p.n;
  uint base = o * p.n * p.inner + in_row;
  VALUE v = VALUE(src[i]);
  uint rank = 0u;
  for (uint j = 0u; j < p.n && rank < p.k; ++j)
    if (before(VALUE(src[base + j * p.inner]), j, v, at)) ++rank;
  if (rank >= p.k) return;
  uint dst = (o * p.k + rank) * p.inner + in_row;
  values[dst] = src[i];
  indices[2u * dst] = at;
  indices[2u * dst + 1u] = 0u;
}
