// variants: f32 f16
// Reductions over the middle axis of an input viewed as [outer, R, inner]; one workgroup per
// (outer, inner) output element and chunk of the reduced axis. OP (specialization constant 1):
// 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 sum of squares, 6 L1, 7 L2, 8 log-sum, 9 log-sum-exp,
// 10 argmax, 11 argmin. Arg reductions write int64 indices (as two 32-bit words) to `index_out`
// and keep the first extreme (the last with SELECT_LAST, constant 3). Accumulation is fp32.
// Split rows: a driver that caps loop iterations per invocation (lavapipe) cannot run a whole
// long row in one workgroup, so the launcher (reduce.cpp) cuts each row into `parts` chunks of
// `chunk` elements. A pass with WRITE_PARTIAL writes each chunk's unfinished result as fp32 to
// part_out ([rows, parts]; arg reductions: the value there and the absolute index to
// index_out), and the next pass, with READ_PARTIAL, reduces those partials (inner 1) as the
// same op: sums stay sums (squares and absolute values are not taken again), log-sum-exp
// partials are finished log-sum-exps (an LSE of LSEs is the LSE), and only a pass without
// WRITE_PARTIAL finishes (mean over `count`, sqrt, log). One pass: parts 1, chunk R, count R.
#version 450
#include "common.glsl"
#include "reduce.glsl"

layout(constant_id = 1) const int OP = 0;
layout(constant_id = 3) const int SELECT_LAST = 0;
layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) writeonly buffer Dst { STORAGE dst[]; };
layout(std430, binding = 2) writeonly buffer Index { uint index_out[]; };
layout(std430, binding = 3) writeonly buffer PartOut { float part_out[]; };
layout(std430, binding = 4) readonly buffer PartIn { float part_in[]; };
layout(std430, binding = 5) readonly buffer PartIndex { uint part_index[]; };
layout(push_constant) uniform Params {
  uint rows, R, inner;
  uint parts, chunk;  // chunks per row and elements per chunk (1 and R: the whole row)
  uint count;         // the mean's divisor: the original row length
  uint flags;         // 1 WRITE_PARTIAL, 2 READ_PARTIAL
} p;

const uint WRITE_PARTIAL = 1u, READ_PARTIAL = 2u;
bool writes_partial() { return (p.flags & WRITE_PARTIAL) != 0u; }
bool reads_partial() { return (p.flags & READ_PARTIAL) != 0u; }
float load(uint e) { return reads_partial() ? part_in[e] : float(src[e]); }
// The index along the original row of element e at position r of this pass's row.
uint index_of(uint e, uint r) { return reads_partial() ? part_index[2u * e] : r; }

shared float arg_value[256];
shared uint arg_index[256];

// NaN wins (first NaN, or last with SELECT_LAST), as numpy's argmax/argmin.
bool better(float v, uint i, float best, uint best_i) {
  if (isnan(v) != isnan(best)) return isnan(v);
  bool more = OP == 10 ? v > best : v < best;
  if (more) return true;
  if (v == best || isnan(v)) return SELECT_LAST != 0 ? i > best_i : i < best_i;
  return false;
}

void main() {
  uint g = group_index();
  if (g >= p.rows * p.parts) return;  // uniform per workgroup
  uint row = g / p.parts, part = g % p.parts;
  uint base = (row / p.inner) * p.R * p.inner + row % p.inner;
  uint begin = part * p.chunk, end = p.R - begin > p.chunk ? begin + p.chunk : p.R;
  uint t = gl_LocalInvocationIndex, step = gl_WorkGroupSize.x;
  if (OP >= 10) {
    float best = OP == 10 ? -1.0 / 0.0 : 1.0 / 0.0;
    uint best_i = 0xFFFFFFFFu;
    for (uint r = begin + t; r < end; r += step) {
      uint e = base + r * p.inner;
      float v = load(e);
      uint i = index_of(e, r);
      if (best_i == 0xFFFFFFFFu || better(v, i, best, best_i)) { best = v; best_i = i; }
    }
    arg_value[t] = best;
    arg_index[t] = best_i;
    barrier();
    for (uint stride = step / 2; stride > 0; stride /= 2) {
      if (t < stride) {
        uint oi = arg_index[t + stride];
        if (oi != 0xFFFFFFFFu && (arg_index[t] == 0xFFFFFFFFu || better(arg_value[t + stride], oi, arg_value[t], arg_index[t]))) {
          arg_value[t] = arg_value[t + stride];
          arg_index[t] = oi;
        }
      }
      barrier();
    }
    if (t == 0) {
      uint at = writes_partial() ? g : row;
      if (writes_partial()) part_out[g] = arg_value[0];
      index_out[2 * at] = arg_index[0] == 0xFFFFFFFFu ? 0u : arg_index[0];
      index_out[2 * at + 1] = 0u;
    }
    return;
  }
  int kind = OP == 2 ? RED_MAX : OP == 3 ? RED_MIN : OP == 4 ? RED_MUL : RED_ADD;
  float acc = OP == 2 ? -1.0 / 0.0 : OP == 3 ? 1.0 / 0.0 : OP == 4 ? 1.0 : 0.0;
  float m = 0.0;
  if (OP == 9) {  // log-sum-exp: subtract the maximum first
    float mx = -1.0 / 0.0;
    for (uint r = begin + t; r < end; r += step) mx = max(mx, load(base + r * p.inner));
    m = workgroup_max(mx);
    if (isinf(m)) m = 0.0;
  }
  float nan_seen = 0.0;  // Max/Min: NaN anywhere in the row makes the result NaN
  for (uint r = begin + t; r < end; r += step) {
    float x = load(base + r * p.inner);
    if ((OP == 2 || OP == 3) && isnan(x)) nan_seen = 1.0;
    switch (OP) {
      case 5: case 7: if (!reads_partial()) x = x * x; break;
      case 6: if (!reads_partial()) x = abs(x); break;
      case 9: x = exp(x - m); break;
    }
    acc = combine(acc, x, kind);
  }
  float total = workgroup_reduce(acc, kind);
  if (OP == 2 || OP == 3) {
    if (workgroup_sum(nan_seen) > 0.0) total = 0.0 / 0.0;
  }
  if (t == 0) {
    float y = total;
    if (OP == 9) y = log(total) + m;  // finished even in a partial (see the top)
    if (writes_partial()) {
      part_out[g] = y;
    } else {
      if (OP == 1) y = total / float(p.count);
      else if (OP == 7) y = sqrt(total);
      else if (OP == 8) y = log(total);
      dst[row] = STORAGE(y);
    }
  }
}
