// variants: f32 f16 i32 i64
// CumSum over an input viewed as [outer, n, inner], one invocation per line (outer, inner)
// summing the steps [step_begin, step_end) of its line in order (from the end when reverse):
// floats in fp32 with Kahan compensation, integers in their own type (wrapping, as the cpu
// kernel's stored sums do). The launcher splits a line longer than the driver's loop cap over
// several dispatches; the running sum passes between them through Carry (per line: fp32 sum
// and compensation as bits, or the integer sum as low/high words). Flags: 1 exclusive, 2
// reverse, 4 read the carry, 8 write the carry.
#version 450
#include "common.glsl"
#include "element.glsl"

layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
layout(std430, binding = 2) buffer Carry { uvec2 carry[]; };
layout(push_constant) uniform Params { uint lines; uint n; uint inner; uint step_begin; uint step_end; uint flags; } p;

void main() {
  uint line = global_index();
  if (line >= p.lines) return;
  uint base = (line / p.inner) * p.n * p.inner + line % p.inner;
  bool exclusive = (p.flags & 1u) != 0u, reverse = (p.flags & 2u) != 0u;
#if INTEGER
  VALUE sum = VALUE(0);
#if defined(PORTA_I64)
  if ((p.flags & 4u) != 0u) sum = int64_t(uint64_t(carry[line].x) | (uint64_t(carry[line].y) << 32));
#else
  if ((p.flags & 4u) != 0u) sum = int(carry[line].x);
#endif
  for (uint s = p.step_begin; s < p.step_end; ++s) {
    uint j = base + (reverse ? p.n - 1u - s : s) * p.inner;
    VALUE v = VALUE(src[j]);
    if (!exclusive) sum += v;
    dst[j] = ELEM(sum);
    if (exclusive) sum += v;
  }
#if defined(PORTA_I64)
  if ((p.flags & 8u) != 0u) carry[line] = uvec2(uint(uint64_t(sum) & 0xFFFFFFFFul), uint(uint64_t(sum) >> 32));
#else
  if ((p.flags & 8u) != 0u) carry[line] = uvec2(uint(sum), 0u);
#endif
#else
  precise float sum = 0.0, comp = 0.0;  // Kahan: sum - comp is the running total
  if ((p.flags & 4u) != 0u) {
    sum = uintBitsToFloat(carry[line].x);
    comp = uintBitsToFloat(carry[line].y);
  }
  for (uint s = p.step_begin; s < p.step_end; ++s) {
    uint j = base + (reverse ? p.n - 1u - s : s) * p.inner;
    float v = float(src[j]);
    if (exclusive) dst[j] = STORAGE(sum);
    precise float y = v - comp;
    precise float t = sum + y;
    comp = (t - sum) - y;
    sum = t;
    if (!exclusive) dst[j] = STORAGE(sum);
  }
  if ((p.flags & 8u) != 0u) carry[line] = uvec2(floatBitsToUint(sum), floatBitsToUint(comp));
#endif
}
