// porta ops — shape arithmetic shared by the data-movement and reduction ops.
//
// Each helper computes one op's output geometry from its input shape and its shape-deciding
// values, so inference, the float64 reference and the kernels agree on it by construction.
// Every helper throws ShapeError "[Op] expected ..., got ..." on bad values.
#pragma once
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "porta/op.hpp"

namespace porta::opdef {

/// Values of a host tensor as int64, whatever its dtype (the reference hands host inputs over
/// as f64: values beyond the int64 range clamp to INT64_MIN/INT64_MAX instead of overflowing).
std::vector<int64_t> tensor_ints(const Tensor& t);
/// Optional input i of a kernel or reference call as ints; empty when absent.
std::vector<int64_t> optional_ints(const KernelContext& ctx, size_t i);
/// Same for inference (reads the host value).
std::vector<int64_t> optional_ints(const InferContext& ctx, size_t i);

/// Shape: the [start, end) of the input's dimensions it lists, after negative values count
/// from the end and both clamp to [0, rank] (end absent: rank; empty when end <= start).
std::pair<int64_t, int64_t> shape_range(const Attributes& attrs, int64_t rank);
/// Shape's output values: the dimensions of `in` in shape_range.
std::vector<int64_t> shape_dims(const Shape& in, const Attributes& attrs);

/// Reshape: resolves 0 (copy input dim unless allowzero) and one -1.
Shape reshape_target(const Shape& in, const std::vector<int64_t>& spec, bool allowzero,
                     std::string_view op);
/// Flatten to 2-D at `axis` (in [-rank, rank]).
Shape flatten_shape(const Shape& in, int64_t axis, std::string_view op);
/// Squeeze: drops the given axes (each must be 1), or every 1 when `axes` is empty.
Shape squeeze_shape(const Shape& in, const std::vector<int64_t>& axes, std::string_view op);
/// Unsqueeze: inserts 1s at `axes` (relative to the output rank).
Shape unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes, std::string_view op);
/// Transpose permutation: reversed when `perm` is empty; checks it is a permutation.
std::vector<int64_t> transpose_perm(size_t rank, const std::vector<int64_t>& perm, std::string_view op);

/// Slice geometry per input axis: first element, step and count.
struct SliceGeometry {
  std::vector<int64_t> start, step, count;
  Shape out_shape() const { return count; }
};
SliceGeometry slice_geometry(const Shape& in, const std::vector<int64_t>& starts,
                             const std::vector<int64_t>& ends, const std::vector<int64_t>& axes,
                             const std::vector<int64_t>& steps, std::string_view op);

/// Expand: bidirectional broadcast of `in` with `target`.
Shape expand_shape(const Shape& in, const std::vector<int64_t>& target, std::string_view op);
/// Tile: in[i] * repeats[i].
Shape tile_shape(const Shape& in, const std::vector<int64_t>& repeats, std::string_view op);
/// Pad: checks `pads` (2*rank values, begins then ends) against the mode; returns out shape.
Shape pad_shape(const Shape& in, const std::vector<int64_t>& pads, std::string_view mode,
                std::string_view op);
/// Concat along `axis`: checks ranks and the other dims; returns out shape.
Shape concat_shape(const std::vector<Shape>& ins, int64_t axis, std::string_view op);
/// Split sizes along `axis` for `outputs` outputs: `split` when given, else equal parts (the
/// last one smaller when the axis does not divide, as opset 18 specifies).
std::vector<int64_t> split_sizes(const Shape& in, int64_t axis, const std::vector<int64_t>& split,
                                 size_t outputs, std::string_view op);

/// Reductions: the axes to reduce (sorted, normalized). `axes` from the input when given,
/// else from the attribute; empty -> all axes, or none with noop_with_empty_axes.
std::vector<int64_t> reduce_axes(const Shape& in, const std::vector<int64_t>& axes, bool noop_empty,
                                 std::string_view op);
Shape reduce_shape(const Shape& in, const std::vector<int64_t>& axes, bool keepdims);

}  // namespace porta::opdef

namespace porta::opdef {

/// Pad: the input index output index `o` reads along an axis of size `dim` padded by `begin`
/// in front, or -1 when it reads the constant (constant mode, or outside a cropped axis).
/// reflect mirrors without repeating the edge; edge repeats the edge element.
int64_t pad_source_index(int64_t o, int64_t begin, int64_t dim, std::string_view mode);

}  // namespace porta::opdef
