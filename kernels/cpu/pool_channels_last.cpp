// porta cpu kernels — MaxPool / AveragePool over channels-last f32 (pool_channels_last.hpp).
#include "kernels/cpu/pool_channels_last.hpp"

#include <algorithm>
#include <limits>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "ops/pool.hpp"

namespace porta::cpu {

ChannelsLastPool::ChannelsLastPool(const opdef::WindowGeometry& g, int64_t batch_, int64_t channels_, bool max_,
                                   bool include_pad)
    : batch(batch_), channels(channels_), max(max_) {
  const size_t n = g.spatial(), skip = 3 - n;  // absent leading axes keep size 1
  for (size_t i = 0; i < n; ++i) {
    const size_t a = skip + i;
    in[a] = g.in[i];
    out[a] = g.out[i];
    kernel[a] = g.kernel[i];
    stride[a] = g.strides[i];
    dilation[a] = g.dilations[i];
    pad_begin[a] = g.pad_begin[i];
    if (!max)
      for (int64_t o = 0; o < g.out[i]; ++o) taps[a].push_back(opdef::pool_taps(g, i, o, include_pad));
  }
  for (size_t a = 0; a < skip; ++a) taps[a] = {1};
}

// Output pixels [p0, p1) (flat over N x out D x out H x out W).
PORTA_CPU_CLONES
void pool_channels_last_pixels_f32(const float* x, float* y, const ChannelsLastPool& p, int64_t p0, int64_t p1) {
  const int64_t c = p.channels;
  for (int64_t pixel = p0; pixel < p1; ++pixel) {
    int64_t o[3], rest = pixel;
    for (int a = 2; a >= 0; --a) {
      o[a] = rest % p.out[a];
      rest /= p.out[a];
    }
    const int64_t n = rest;
    float* yr = y + pixel * c;
    bool first = true;
    for (int64_t kd = 0; kd < p.kernel[0]; ++kd) {
      const int64_t id = o[0] * p.stride[0] - p.pad_begin[0] + kd * p.dilation[0];
      if (id < 0 || id >= p.in[0]) continue;
      for (int64_t kh = 0; kh < p.kernel[1]; ++kh) {
        const int64_t ih = o[1] * p.stride[1] - p.pad_begin[1] + kh * p.dilation[1];
        if (ih < 0 || ih >= p.in[1]) continue;
        for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
          const int64_t iw = o[2] * p.stride[2] - p.pad_begin[2] + kw * p.dilation[2];
          if (iw < 0 || iw >= p.in[2]) continue;
          const float* xr = x + (((n * p.in[0] + id) * p.in[1] + ih) * p.in[2] + iw) * c;
          if (first) {
            std::copy(xr, xr + c, yr);
            first = false;
          } else if (p.max) {
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) yr[k] = xr[k] > yr[k] ? xr[k] : yr[k];
          } else {
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) yr[k] += xr[k];
          }
        }
      }
    }
    // A window without a tap inside the input (not produced by valid geometry): -inf, or the
    // reference's 0 / taps.
    if (first) std::fill(yr, yr + c, p.max ? -std::numeric_limits<float>::infinity() : 0.0f);
    if (!p.max) {
      const float taps = static_cast<float>(p.taps[0][o[0]] * p.taps[1][o[1]] * p.taps[2][o[2]]);
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) yr[k] /= taps;
    }
  }
}

void pool_channels_last_f32(const float* x, float* y, const ChannelsLastPool& p) {
  const int64_t window = std::max<int64_t>(1, p.kernel[0] * p.kernel[1] * p.kernel[2] * p.channels);
  // Tasks of about 64 Ki window taps.
  parallel_for(p.output_pixels(), std::max<int64_t>(1, 65536 / window),
               [&](int64_t p0, int64_t p1) { pool_channels_last_pixels_f32(x, y, p, p0, p1); });
}

}  // namespace porta::cpu
