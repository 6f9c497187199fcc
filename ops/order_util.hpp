// porta ops — helpers shared by TopK, CumSum and Trilu and their kernels.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "porta/op.hpp"

namespace porta::opdef {

/// A tensor seen as [outer, n, inner] around `axis` (rows of n elements `inner` apart), the
/// geometry TopK and CumSum share on every backend.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
  AxisSplit g;
  g.n = shape.at(static_cast<size_t>(axis));
  for (int64_t i = 0; i < axis; ++i) g.outer *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) g.inner *= shape[i];
  return g;
}

/// TopK's order: whether element (a, at index ia) comes before (b, ib) in the output. Larger
/// first when `largest`, else smaller first; NaN counts as larger than every number (as in
/// PyTorch), so NaNs come first with largest = 1 and last with largest = 0; equal values (NaN
/// and NaN too) keep the lower index first (numpy's stable sort, ONNX's reference).
template <typename T>
inline bool topk_before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) {
      if (na && nb) return ia < ib;
      return largest ? na : nb;
    }
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

/// CumSum's axis (input 1, a 0-D or 1-element i64/i32 tensor on any device) in [0, rank).
int64_t cumsum_axis(const KernelContext& ctx);
/// Trilu's k (input 1, optional, a 0-D or 1-element i64/i32 tensor on any device; 0 when absent).
int64_t trilu_k(const KernelContext& ctx);

}  // namespace porta::opdef
