// variants: f32 f16 i32 i64 i8 u8
// ScatterND / ScatterElements after the data was copied into `out`: the updates are rows of
// `slice` elements, and the launcher (scatter_gather.cpp) has grouped them by target row on
// the host, with every index checked and made non-negative. One invocation per (group, slice
// element):
//   mode 0 (reduction none): group g is one update row order[g] landing on row target[g]
//     (only the last update of each target is listed, so no two invocations write one element);
//   modes 1-4 (add, mul, max, min): group g folds update rows order[starts[g] + chunk_begin ..]
//     (at most chunk_len of them: the launcher splits long groups over dispatches to stay under
//     the driver's loop cap) into out's row target[g].
#version 450
#include "common.glsl"
#include "element.glsl"

layout(std430, binding = 0) readonly buffer Updates { ELEM upd[]; };
layout(std430, binding = 1) readonly buffer Order { int order_[]; };
layout(std430, binding = 2) readonly buffer Starts { int starts[]; };
layout(std430, binding = 3) readonly buffer Target { int target[]; };
layout(std430, binding = 4) buffer Out { ELEM out_[]; };
layout(push_constant) uniform Params {
  uint n;            // groups * slice
  uint slice;
  uint mode;
  uint chunk_begin;
  uint chunk_len;
} p;

VALUE fold(VALUE a, VALUE b) {
  if (p.mode == 1u) return a + b;
  if (p.mode == 2u) return a * b;
  if (p.mode == 3u) return a < b ? b : a;
  return b < a ? b : a;
}

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  uint s = i % p.slice, g = i / p.slice;
  uint dst = uint(target[g]) * p.slice + s;
  if (p.mode == 0u) {
    out_[dst] = upd[uint(order_[g]) * p.slice + s];
    return;
  }
  uint b = uint(starts[g]) + p.chunk_begin, e = uint(starts[g + 1]);
  if (b >= e) return;
  e = min(e, b + p.chunk_len);
  VALUE acc = VALUE(out_[dst]);
  for (uint k = b; k < e; ++k) acc = fold(acc, VALUE(upd[uint(order_[k]) * p.slice + s]));
  out_[dst] = ELEM(acc);
}
