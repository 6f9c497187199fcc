// porta ops — index loops for the float64 references of data-movement ops.
// Plain and slow on purpose: references are the ground truth kernels are checked against.
#pragma once
#include <cstdint>
#include <vector>

#include "porta/tensor.hpp"

namespace porta::opdef {

/// Calls f(index) for every multi-index of `shape` in C order (once for a scalar shape).
template <typename F>
void for_each_index(const Shape& shape, F&& f) {
  for (int64_t d : shape)
    if (d == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    f(static_cast<const std::vector<int64_t>&>(idx));
    size_t i = shape.size();
    while (i > 0) {
      --i;
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
      if (i == 0) return;
    }
    if (shape.empty()) return;
  }
}

/// C-order linear offset of a multi-index.
inline int64_t linear_offset(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t i = 0; i < shape.size(); ++i) off = off * shape[i] + idx[i];
  return off;
}

}  // namespace porta::opdef
