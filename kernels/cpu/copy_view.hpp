// porta cpu kernels — strided copies shared by the data-movement kernels.
//
// Most data-movement ops (Transpose, Slice, Expand, Tile, Concat, Split, Pad) are a view of
// their input (permuted, offset, negative or zero strides) copied into their output. These
// helpers do that copy fast: dims are coalesced, contiguous runs go through memcpy, and a
// view whose unit-stride axis is not innermost (a transpose) is copied in cache tiles.
#pragma once
#include <vector>

#include "porta/tensor.hpp"

namespace porta::cpu {

/// Copies every element of `src` into `dst`. Both are cpu tensors of one dtype and one shape
/// with any strides (negative and 0 included on src; dst must not overlap itself or src).
void copy_strided(const Tensor& src, const Tensor& dst);

/// Copies `bytes` from src to dst unless they are the same memory (reshape-like kernels whose
/// output the session may have aliased to the input).
void copy_if_distinct(const Tensor& src, const Tensor& dst);

}  // namespace porta::cpu
