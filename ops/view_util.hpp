// porta ops — strided views for the data-movement kernels (Slice, Expand, Tile, Concat,
// Split): where each op reads and writes, as shape + element strides + offset, computed once
// for every backend. A kernel copies between two such views with its own strided copy (cpu
// copy_strided, gpu copy_view, vulkan copy.comp). Plain C++ (the CUDA/HIP sources include it
// as host code).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/shape_util.hpp"
#include "porta/op.hpp"

namespace porta::opdef {

/// Elements of a buffer seen as a tensor: element (i0, i1, ...) lies at
/// offset + sum(i_k * strides[k]).
struct StridedView {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
};

/// The view a tensor is (its shape, strides and offset in its storage).
inline StridedView view_of(const Tensor& t) { return {t.shape(), t.strides(), t.offset()}; }
/// A dense row-major tensor of `shape` from element 0 (a buffer bound by itself).
inline StridedView dense_view(const Shape& shape) { return {shape, contiguous_strides(shape), 0}; }

/// Slice's geometry for a call (inputs starts, ends, axes?, steps? read on the host).
SliceGeometry slice_geometry_of(const KernelContext& ctx);
/// Slice: `in` read from g.start along each axis in steps of g.step (negative steps walk
/// backwards), g.count elements per axis.
inline StridedView slice_view(const StridedView& in, const SliceGeometry& g) {
  StridedView v{g.out_shape(), std::vector<int64_t>(in.strides.size()), in.offset};
  for (size_t i = 0; i < in.strides.size(); ++i) {
    v.offset += g.start[i] * in.strides[i];
    v.strides[i] = g.step[i] * in.strides[i];
  }
  return v;
}

/// StridedCopy (ai.porta): its input's elements as the view its attributes give, relative to
/// the input's first element; a view reaching outside the input is a ShapeError.
StridedView strided_copy_view(const KernelContext& ctx);
/// The lowest and highest element a view of `shape`, `strides` and `offset` reads ({0, -1}:
/// none).
std::pair<int64_t, int64_t> strided_copy_span(const Shape& shape, const std::vector<int64_t>& strides, int64_t offset);

/// Elements [begin, begin + size) along `axis` of `v`: Concat's destination of one input,
/// Split's source of one output.
inline StridedView axis_window(const StridedView& v, int64_t axis, int64_t begin, int64_t size) {
  StridedView w = v;
  const size_t a = static_cast<size_t>(axis);
  w.shape[a] = size;
  w.offset += begin * v.strides[a];
  return w;
}

/// Tile from `in` into `out` (same rank, out dims multiples of in's): output axis i of size
/// r * d is seen as two axes (r, d); the source is read with stride 0 along r and its own
/// stride along d. Both views have rank 2 * rank. `in` must have no empty axis.
struct TileViews {
  StridedView src, dst;
};
inline TileViews tile_views(const StridedView& in, const StridedView& out) {
  TileViews t;
  t.src.offset = in.offset;
  t.dst.offset = out.offset;
  for (size_t i = 0; i < in.shape.size(); ++i) {
    const int64_t d = in.shape[i], r = out.shape[i] / d;
    t.src.shape.insert(t.src.shape.end(), {r, d});
    t.src.strides.insert(t.src.strides.end(), {0, in.strides[i]});
    t.dst.strides.insert(t.dst.strides.end(), {out.strides[i] * d, out.strides[i]});
  }
  t.dst.shape = t.src.shape;
  return t;
}

/// Concat's inputs (Split's outputs) as windows along `axis` of the output (input): part
/// `index` covers [begin, begin + size).
struct AxisPart {
  size_t index;
  int64_t begin, size;
};
struct AxisParts {
  int64_t axis = 0;
  std::vector<AxisPart> parts;
};
/// Concat: the normalised `axis` attribute and one part per defined input.
AxisParts concat_parts(const KernelContext& ctx);
/// Split: the normalised `axis`, the sizes from the `split` input or attribute (else equal
/// parts), and one part per defined output.
AxisParts split_parts(const KernelContext& ctx);

}  // namespace porta::opdef
