// porta gpu kernels — strided copies, the one kernel behind the data-movement ops.
//
// Transpose, Slice, Expand, Tile, Concat and Split are a view of their input (permuted,
// offset, negative or zero strides) copied into their output or a view of it. The copy moves
// elements by size (1, 2, 4 or 8 bytes), so dtypes share four instantiations.
#pragma once
#include "kernels/cuda/elementwise.cuh"

namespace porta::PORTA_GPU_NS {

/// Copies `src` (any strides; broadcast to dst's shape) into `dst` (any strides that do not
/// overlap) on `device`'s stream. Same dtype. Throws Unsupported past kMaxDims merged axes.
void copy_view(const Tensor& src, const Tensor& dst, Device device);

}  // namespace porta::PORTA_GPU_NS
