// porta cpu kernels — MaxPool and AveragePool over f32 values in the channels-last layout
// (kernels/cpu/dnn_layout.hpp), porta's own loop: each output pixel's C channels are one
// contiguous row, accumulated over the window's rows with wide vectors. oneDNN 2.6 runs its
// reference implementation where a window's padding reaches past the input (Inception v3's
// 3x3 average with pads 1 over 1x1 images: 120 us for 2048 channels), and its jit kernel costs
// several microseconds on the small images of CNNs at batch 1 (DenseNet's 2x2 average of 128
// channels over 16x16: 7 us), where this loop is memory-bound.
#pragma once
#include <vector>

#include "ops/window.hpp"

namespace porta::cpu {

/// A pooling call's geometry as three spatial axes (D, H, W; leading axes of size 1 when the
/// input has fewer), with AveragePool's divisor per output index of each axis.
struct ChannelsLastPool {
  int64_t batch = 0, channels = 0;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0};
  bool max = false;
  std::vector<int64_t> taps[3];  ///< AveragePool: opdef::pool_taps per output index (1 for size-1 axes)

  /// From the geometry (opdef::pool_geometry) of an input N x C x spatial (1 to 3 axes).
  ChannelsLastPool(const opdef::WindowGeometry& g, int64_t batch, int64_t channels, bool max, bool include_pad);
  int64_t output_pixels() const { return batch * out[0] * out[1] * out[2]; }
};

/// Pools x (N x spatial x C stored) into y (N x out spatial x C stored), as the op's reference
/// does: MaxPool takes the window's first tap inside the input, then every greater one (so NaN
/// stays only where it comes first, padding never wins); AveragePool sums the taps inside the
/// input in window order and divides by the taps counted (pool_taps). Split across threads.
void pool_channels_last_f32(const float* x, float* y, const ChannelsLastPool& p);

}  // namespace porta::cpu
