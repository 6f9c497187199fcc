// variants: f32 f16
// Resize: one invocation per output element. The launcher's host plan (ops/resize_util.hpp)
// gives each axis either taps 0 (untouched: source offset = coordinate * in_stride) or a
// table of `taps` (source offset, weight) entries per output coordinate, offsets already
// multiplied by the axis's input stride; an offset of -1 in the first tap means the output
// is the extrapolation value (tf_crop_and_resize). The output sums, over every combination of
// the tabled axes' taps (`combos` of them, at most 4^rank), weight product times source.
// Loop iterations per invocation: rank + combos * (rank + 1) + 2, checked by the launcher.
#version 450
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Src { STORAGE src[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
layout(std430, binding = 2) readonly buffer Weight { float weight[]; };
layout(std430, binding = 3) writeonly buffer Dst { STORAGE dst[]; };
layout(push_constant) uniform Params {
  uint n;
  int rank;
  uint combos;
  float extrapolation;
  int out_shape[6];
  int in_stride[6];
  int taps[6];
  int table_offset[6];
} p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  int rest = int(i);
  int fixed_offset = 0;
  int base[6];
  for (int k = p.rank - 1; k >= 0; --k) {
    int c = k > 0 ? rest % p.out_shape[k] : rest;
    rest /= p.out_shape[k];
    if (p.taps[k] == 0) {
      fixed_offset += c * p.in_stride[k];
      base[k] = -1;
    } else {
      base[k] = p.table_offset[k] + c * p.taps[k];
      if (index[base[k]] < 0) {
        dst[i] = STORAGE(p.extrapolation);
        return;
      }
    }
  }
  float acc = 0.0;
  for (uint combo = 0u; combo < p.combos; ++combo) {
    uint r = combo;
    int offset = fixed_offset;
    float w = 1.0;
    for (int k = p.rank - 1; k >= 0; --k) {
      if (p.taps[k] == 0) continue;
      int e = base[k] + int(r % uint(p.taps[k]));
      r /= uint(p.taps[k]);
      offset += index[e];
      w *= weight[e];
    }
    acc += w * float(src[offset]);
  }
  dst[i] = STORAGE(acc);
}
