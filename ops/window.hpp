// porta ops — geometry of sliding-window ops (Conv, ConvTranspose, MaxPool, AveragePool):
// reading kernel_shape / strides / dilations / pads / auto_pad, checking their lengths, and
// the output size. Shared by the op definitions and their kernels so both agree exactly.
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "porta/attributes.hpp"
#include "porta/tensor.hpp"

namespace porta::opdef {

/// Per spatial axis (N and C excluded).
struct WindowGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
  size_t spatial() const { return in.size(); }
};

/// Geometry of a strided window over `x` (N x C x spatial...) with `kernel` (one size per
/// spatial axis). Reads strides, dilations (absent: 1s), pads, auto_pad and, when
/// `ceil_mode`, rounds the output size up the way PyTorch does (a window that would start in
/// the end padding is dropped). Throws ShapeError for attribute lists of the wrong length,
/// non-positive strides / dilations, negative pads, or a window larger than the padded input.
WindowGeometry window_geometry(std::string_view op, const Shape& x, const std::vector<int64_t>& kernel,
                               const Attributes& attrs, bool ceil_mode = false);

/// Geometry of ConvTranspose over `x` with `kernel`: output_padding, output_shape and auto_pad
/// as ONNX specifies (output_shape decides the pads when given; SAME_UPPER puts the odd pad at
/// the end). `out` is the output's spatial size.
WindowGeometry transposed_geometry(std::string_view op, const Shape& x, const std::vector<int64_t>& kernel,
                                   const Attributes& attrs, std::vector<int64_t>* output_padding);

/// The kernel's spatial size: `kernel_shape` when given (checked against `from_weight` when
/// that is non-empty), else `from_weight`. ShapeError on a length or value mismatch.
std::vector<int64_t> kernel_shape(std::string_view op, const Attributes& attrs, size_t spatial,
                                  const std::vector<int64_t>& from_weight);

/// The kernel taps that read the input (not only padding) somewhere: per spatial axis, the
/// first and last such tap. A conv over a map smaller than its kernel's reach (a 3x3 conv over
/// a 1x1 map with pads 1 reads only its centre tap; a 1x7 conv over a 2-wide map 3 of its 7
/// columns) equals the conv with the taps outside [first, last] cut off and each pad reduced by
/// the cut taps times the dilation. Taps between first and last stay even when no output reads
/// them (a stride above the dilation can leave gaps), so the result is a plain conv.
/// Nothing when no tap can be cut, when some axis has no tap reading the input at all, or when
/// a cut would need a negative pad.
struct TapRange {
  std::vector<int64_t> first, last;
};
std::optional<TapRange> input_taps(const WindowGeometry& g);

}  // namespace porta::opdef
