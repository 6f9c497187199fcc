// variants: i32 i64 i8 u8
// Integer reductions over the middle axis of an input viewed as [outer, R, inner]; one
// workgroup per (outer, inner) output element, as reduce.comp does for floats. OP
// (specialization constant 1): 0 sum, 1 mean, 2 max, 3 min, 10 argmax, 11 argmin. Values
// accumulate in int64 (the launcher requires shaderInt64), so results match the cpu kernels:
// sums wrap to the element type when stored, the mean is the int64 sum divided by R truncated
// toward zero, and arg reductions keep the first extreme (the last with SELECT_LAST, constant 3)
// and write int64 indices. Integer subgroup arithmetic on 64-bit values needs an extension the
// device may lack, so the workgroup combines through a shared-memory tree.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#include "common.glsl"
#include "element.glsl"

layout(constant_id = 1) const int OP = 0;
layout(constant_id = 3) const int SELECT_LAST = 0;
layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
layout(std430, binding = 2) writeonly buffer Index { int64_t index_out[]; };
layout(push_constant) uniform Params { uint rows; uint R; uint inner; } p;

const uint kNone = 0xFFFFFFFFu;  // "no element seen yet" (R < 2^32 - 1: checked by the launcher)
shared int64_t s_value[256];
shared uint s_index[256];

// Whether (v, i) replaces (best, best_i): a strictly better value, or an equal one at the end
// that SELECT_LAST prefers.
bool better(int64_t v, uint i, int64_t best, uint best_i) {
  if (best_i == kNone) return true;
  if (v != best) return OP == 10 || OP == 2 ? v > best : v < best;
  return SELECT_LAST != 0 ? i > best_i : i < best_i;
}

void main() {
  uint row = group_index();
  if (row >= p.rows) return;  // uniform per workgroup
  uint base = (row / p.inner) * p.R * p.inner + row % p.inner;
  uint t = gl_LocalInvocationIndex, step = gl_WorkGroupSize.x;
  bool extreme = OP == 2 || OP == 3 || OP >= 10;
  int64_t acc = int64_t(0);
  uint acc_i = kNone;
  for (uint r = t; r < p.R; r += step) {
    int64_t v = int64_t(src[base + r * p.inner]);
    if (!extreme) {
      acc += v;
      acc_i = r;
    } else if (better(v, r, acc, acc_i)) {
      acc = v;
      acc_i = r;
    }
  }
  s_value[t] = acc;
  s_index[t] = acc_i;
  barrier();
  for (uint stride = step / 2; stride > 0; stride /= 2) {
    if (t < stride) {
      uint oi = s_index[t + stride];
      if (!extreme) {
        s_value[t] += s_value[t + stride];
      } else if (oi != kNone && better(s_value[t + stride], oi, s_value[t], s_index[t])) {
        s_value[t] = s_value[t + stride];
        s_index[t] = oi;
      }
    }
    barrier();
  }
  if (t != 0) return;
  if (OP >= 10) {
    index_out[row] = int64_t(s_index[0] == kNone ? 0u : s_index[0]);
    return;
  }
  int64_t y = s_value[0];
  if (OP == 1 && p.R > 0u) {  // truncated toward zero, as C++ divides (unsigned: no overflow)
    uint64_t q = (y < int64_t(0) ? uint64_t(0) - uint64_t(y) : uint64_t(y)) / uint64_t(p.R);
    y = y < int64_t(0) ? -int64_t(q) : int64_t(q);
  }
  dst[row] = ELEM(y);
}
