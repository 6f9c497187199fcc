// porta ops — Gather's index check, shared by its reference and kernels.
#pragma once
#include <cstdint>

#include "porta/tensor.hpp"

namespace porta::opdef {

/// Throws ShapeError "[Gather] expected indices in [-dim, dim) ..., got <index>" when `index`
/// is out of range for `axis` of `data`.
void check_gather_index(int64_t index, int64_t dim, int64_t axis, const Shape& data);

}  // namespace porta::opdef
