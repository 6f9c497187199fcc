// porta ops — NonZero's host-side pieces, shared by its reference and kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "porta/tensor.hpp"

namespace porta::opdef {

/// Row-major positions of the elements of `x` that are not zero (any dtype; floats by value,
/// so -0.0 is zero and NaN is not). Reads `x` on the host.
std::vector<int64_t> nonzero_positions(const Tensor& x);
/// Throws ShapeError unless `y` has NonZero's output shape for `positions` of `x`
/// ([max(rank, 1), count]): a kernel's output was sized from the same host values.
void check_nonzero_output(const Tensor& x, const Tensor& y, const std::vector<int64_t>& positions);
/// Writes NonZero's [max(rank, 1), count] coordinates of `positions` in a tensor of `shape`.
void write_nonzero_coordinates(const Shape& shape, const std::vector<int64_t>& positions, int64_t* out);

}  // namespace porta::opdef
