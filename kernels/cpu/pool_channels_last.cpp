// porta cpu kernels — MaxPool / AveragePool over channels-last f32 (pool_channels_last.hpp).
#include "kernels/cpu/pool_channels_last.hpp"

#include <algorithm>
#include <limits>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "kernels/cpu/vector_width.hpp"
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

// Channels [c0, c0 + L V) of one output pixel from its `n` taps inside the input (window
// order), in vectors of VB bytes (L floats; the clone's width, vector_width.hpp): the sums or maxima
// stay in registers across the taps.
template <int VB, int V>
inline __attribute__((always_inline)) void pool_block(const float* const* taps, int64_t n, int64_t c0, float* yr,
                                                      bool max, float divisor) {
  using Vec = typename VecOf<float, VB>::type;
  constexpr int L = VB / 4;
  Vec acc[V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) std::memcpy(&acc[v], taps[0] + c0 + L * v, VB);
  for (int64_t t = 1; t < n; ++t) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      Vec xv;
      std::memcpy(&xv, taps[t] + c0 + L * v, VB);
      acc[v] = max ? (xv > acc[v] ? xv : acc[v]) : acc[v] + xv;
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const Vec out = max ? acc[v] : acc[v] / divisor;
    std::memcpy(yr + c0 + L * v, &out, VB);
  }
}

// Output pixels [p0, p1) (flat over N x out D x out H x out W). The pixel's coordinates advance
// as an odometer (no division per pixel); the input rows its window covers are found once per
// output row, its taps inside the input listed per pixel, then each block of channels is
// pooled over them.
template <int VB>
inline __attribute__((always_inline)) void pool_pixels_at(const float* x, float* y, const ChannelsLastPool& p,
                                                          int64_t p0, int64_t p1) {
  constexpr int L = VB / 4;
  const int64_t c = p.channels;
  thread_local std::vector<const float*> taps, rows;
  taps.resize(static_cast<size_t>(std::max<int64_t>(1, p.kernel[0] * p.kernel[1] * p.kernel[2])));
  rows.resize(static_cast<size_t>(std::max<int64_t>(1, p.kernel[0] * p.kernel[1])));
  int64_t o[3], rest = p0;
  for (int a = 2; a >= 0; --a) {
    o[a] = rest % p.out[a];
    rest /= p.out[a];
  }
  int64_t n = rest, row_count = -1;  // -1: the rows of the current output row are not listed yet
  for (int64_t pixel = p0; pixel < p1; ++pixel) {
    if (row_count < 0) {
      row_count = 0;
      for (int64_t kd = 0; kd < p.kernel[0]; ++kd) {
        const int64_t id = o[0] * p.stride[0] - p.pad_begin[0] + kd * p.dilation[0];
        if (id < 0 || id >= p.in[0]) continue;
        for (int64_t kh = 0; kh < p.kernel[1]; ++kh) {
          const int64_t ih = o[1] * p.stride[1] - p.pad_begin[1] + kh * p.dilation[1];
          if (ih >= 0 && ih < p.in[1])
            rows[static_cast<size_t>(row_count++)] = x + ((n * p.in[0] + id) * p.in[1] + ih) * p.in[2] * c;
        }
      }
    }
    int64_t count = 0;
    const int64_t iw0 = o[2] * p.stride[2] - p.pad_begin[2];
    for (int64_t r = 0; r < row_count; ++r)
      for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
        const int64_t iw = iw0 + kw * p.dilation[2];
        if (iw >= 0 && iw < p.in[2]) taps[static_cast<size_t>(count++)] = rows[static_cast<size_t>(r)] + iw * c;
      }
    float* yr = y + pixel * c;
    if (count == 0) {
      // A window without a tap inside the input (not produced by valid geometry): -inf, or the
      // reference's 0 / taps.
      std::fill(yr, yr + c, p.max ? -std::numeric_limits<float>::infinity() : 0.0f);
    } else {
      const float divisor = p.max ? 1.0f : static_cast<float>(p.taps[0][o[0]] * p.taps[1][o[1]] * p.taps[2][o[2]]);
      int64_t c0 = 0;
      for (; c0 + 4 * L <= c; c0 += 4 * L) pool_block<VB, 4>(taps.data(), count, c0, yr, p.max, divisor);
      for (; c0 + L <= c; c0 += L) pool_block<VB, 1>(taps.data(), count, c0, yr, p.max, divisor);
      for (; c0 < c; ++c0) {  // the last channels, one at a time, as the blocks do
        float acc = taps[0][c0];
        for (int64_t t = 1; t < count; ++t) {
          const float v = taps[t][c0];
          acc = p.max ? (v > acc ? v : acc) : acc + v;
        }
        yr[c0] = p.max ? acc : acc / divisor;
      }
    }
    if (++o[2] < p.out[2]) continue;  // next pixel; past the row's end, a new output row
    o[2] = 0;
    row_count = -1;
    for (int a = 1; a >= 0; --a) {
      if (++o[a] < p.out[a]) break;
      o[a] = 0;
      if (a == 0) ++n;
    }
  }
}

PORTA_CPU_CLONES
void pool_channels_last_pixels_f32(const float* x, float* y, const ChannelsLastPool& p, int64_t p0, int64_t p1) {
  switch (vector_bytes()) {
    case 64: return pool_pixels_at<64>(x, y, p, p0, p1);
    case 32: return pool_pixels_at<32>(x, y, p, p0, p1);
    default: return pool_pixels_at<16>(x, y, p, p0, p1);
  }
}

void pool_channels_last_f32(const float* x, float* y, const ChannelsLastPool& p) {
  const int64_t window = std::max<int64_t>(1, p.kernel[0] * p.kernel[1] * p.kernel[2] * p.channels);
  // Tasks of about 8 Ki window taps: a pool after a Conv that ran on every thread reads what
  // each thread wrote from that core's cache when it splits too (the cnn example's first
  // MaxPool, 16 channels at 64x64, two threads: 25.8 us on one thread against 7-8 us split).
  parallel_for(p.output_pixels(), std::max<int64_t>(1, 8192 / window),
               [&](int64_t p0, int64_t p1) { pool_channels_last_pixels_f32(x, y, p, p0, p1); });
}

}  // namespace porta::cpu
