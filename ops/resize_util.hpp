// porta ops — Resize's coordinate rules, shared by its reference and its kernels (defined in
// ops/resize.cpp). Everything here runs on the host in double precision: kernels turn the
// per-axis taps into tables (source index, weight) and only sum on the device, so every
// backend picks the same source pixels as the reference, ties of nearest rounding included.
#pragma once
#include <cstdint>
#include <vector>

#include "porta/attributes.hpp"
#include "porta/op.hpp"
#include "porta/tensor.hpp"

namespace porta::opdef {

struct ResizeAttrs {
  enum class Mode { nearest, linear, cubic } mode = Mode::nearest;
  enum class Coord { half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_crop_and_resize } coord =
      Coord::half_pixel;
  enum class Nearest { round_prefer_floor, round_prefer_ceil, floor, ceil } nearest = Nearest::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

/// Reads and checks the attributes: an unknown mode is InvalidArgument, an ONNX option porta
/// does not implement (opset 18's antialias / axes / keep_aspect_ratio_policy when not
/// default, other coordinate modes) is Unsupported.
ResizeAttrs resize_attrs(const Attributes& attrs);

/// Per axis: the output length and what the coordinate formulas use.
struct ResizeGeometry {
  Shape out;
  std::vector<double> scale;        ///< given scale, or out / in when sizes were given
  std::vector<double> length;       ///< length_resized of the formulas (in * scale, or out)
  std::vector<double> roi_start, roi_end;  ///< tf_crop_and_resize only (else 0 and 1)
};

/// Output shape and per-axis scales from X's shape and the given scales or sizes (exactly one
/// of them non-empty) and roi (read only for tf_crop_and_resize). Errors are ShapeError /
/// InvalidArgument of the form "[Resize] expected ..., got ...".
ResizeGeometry resize_geometry(const Shape& in, const std::vector<double>& roi, const std::vector<double>& scales,
                               const std::vector<int64_t>& sizes, bool has_scales, bool has_sizes,
                               const ResizeAttrs& a);

/// The taps of one axis: output coordinate o reads index[o * taps + t] (already clamped to
/// [0, in)) with weight[o * taps + t]; outside[o] != 0 means the extrapolation value instead
/// (tf_crop_and_resize). `identity` when every output coordinate reads its own index with
/// weight 1 (kernels skip such axes).
struct ResizeAxis {
  int64_t in = 0, out = 0;
  int taps = 1;
  bool identity = false;
  bool any_outside = false;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> outside;
};
ResizeAxis resize_axis(const ResizeGeometry& g, size_t axis, int64_t in, const ResizeAttrs& a);

/// What a kernel runs: X's axes with adjacent identity axes merged. Axis k of the plan has
/// `out` coordinates and input element stride `in_stride`; taps 0 is an identity axis (offset
/// = coordinate * in_stride), otherwise coordinate c reads the `taps` entries of `index` /
/// `weight` from table_offset + c * taps on (indexes already multiplied by in_stride; an
/// index of -1 in the first tap marks an output of the extrapolation value).
struct ResizePlan {
  struct Axis {
    int64_t out = 0, in_stride = 1;
    int taps = 0;
    int64_t table_offset = 0;
  };
  std::vector<Axis> axes;
  std::vector<int64_t> index;
  std::vector<double> weight;
  int64_t combos = 1;  ///< product of taps over the non-identity axes
  double extrapolation = 0.0;
};
/// Builds the plan of a kernel call. Reads roi / scales / sizes with Tensor::to_doubles (a
/// copy to the host when they live on a device; sizes need none: the output shape has them).
ResizePlan resize_plan(const KernelContext& ctx);

}  // namespace porta::opdef
