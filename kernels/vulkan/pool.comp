// variants: f32 f16 i8 u8
// MaxPool / AveragePool (MAX, specialization constant 1) over N x C x spatial (1 to 3 axes),
// one invocation per output element. Window geometry (pads, strides, dilations, ceil_mode
// output sizes) is computed on the host by the op's own rules (ops/pool.hpp). AveragePool
// divides by the taps inside [lo, hi) per axis: the input, or input plus declared pads with
// count_include_pad. MaxPool ignores NaN unless it is the first tap, like the cpu kernel, and
// can write Indices (pos positions, row- or column-major) as int64. The i8/u8 variants are for
// MaxPool only (values compare exactly as floats).
#version 450
#include "common.glsl"
#include "element.glsl"

layout(constant_id = 1) const int MAX = 1;
layout(std430, binding = 0) readonly buffer Src { ELEM src[]; };
layout(std430, binding = 1) writeonly buffer Dst { ELEM dst[]; };
layout(std430, binding = 2) writeonly buffer Index { uint index_out[]; };
layout(push_constant) uniform Params {
  uint n;
  uint spatial;
  int in_size[3];
  int out_size[3];
  int kernel[3];
  int stride[3];
  int pad[3];
  int dilation[3];
  int lo[3];
  int hi[3];
  uint write_indices;
  uint column_major;
} p;

void main() {
  uint i = global_index();
  if (i >= p.n) return;
  int osize = 1, isize = 1, ksize = 1;
  for (uint d = 0; d < p.spatial; ++d) { osize *= p.out_size[d]; isize *= p.in_size[d]; ksize *= p.kernel[d]; }
  uint plane = i / uint(osize);
  int rem = int(i % uint(osize));
  int o[3];
  for (int d = int(p.spatial) - 1; d >= 0; --d) { o[d] = rem % p.out_size[d]; rem /= p.out_size[d]; }
  float acc = MAX != 0 ? -1.0 / 0.0 : 0.0;
  int best = -1;
  for (int k = 0; k < ksize; ++k) {
    int at[3];
    bool inside = true;
    int kr = k;
    for (int d = int(p.spatial) - 1; d >= 0; --d) {
      at[d] = o[d] * p.stride[d] - p.pad[d] + (kr % p.kernel[d]) * p.dilation[d];
      kr /= p.kernel[d];
      inside = inside && at[d] >= 0 && at[d] < p.in_size[d];
    }
    if (!inside) continue;
    int pos = 0;
    for (uint d = 0; d < p.spatial; ++d) pos = pos * p.in_size[d] + at[d];
    float v = float(src[plane * uint(isize) + uint(pos)]);
    if (MAX == 0) {
      acc += v;
    } else if (best < 0 || v > acc) {
      acc = v;
      if (p.column_major != 0) {
        pos = 0;
        for (int d = int(p.spatial) - 1; d >= 0; --d) pos = pos * p.in_size[d] + at[d];
      }
      best = int(plane) * isize + pos;
    }
  }
  if (MAX == 0) {
    int taps = 1;
    for (uint d = 0; d < p.spatial; ++d) {
      int count = 0;
      for (int k = 0; k < p.kernel[d]; ++k) {
        int at = o[d] * p.stride[d] - p.pad[d] + k * p.dilation[d];
        if (at >= p.lo[d] && at < p.hi[d]) count++;
      }
      taps *= count;
    }
    acc /= float(taps);
  }
#if INTEGER
#if defined(PORTA_U8)
  const float lowest = 0.0;
#else
  const float lowest = -128.0;
#endif
  if (best < 0) acc = lowest;  // no tap inside the input (invalid geometry): the type's lowest
  dst[i] = ELEM(int(acc));
#else
  dst[i] = ELEM(acc);
#endif
  if (MAX != 0 && p.write_indices != 0) {
    index_out[2 * i] = uint(best);
    index_out[2 * i + 1] = best < 0 ? 0xFFFFFFFFu : 0u;
  }
}
