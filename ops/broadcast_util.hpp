// porta ops — broadcast geometry every backend's kernels share: the strides an operand is read
// with when broadcast to an output shape, and the merging of the dimensions that all operands
// of a loop step through as one run. Header-only plain C++ (the CUDA/HIP sources include it
// as host code).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "porta/tensor.hpp"

namespace porta::opdef {

/// Element strides of an operand of shape `in` and strides `in_strides` read as `out` under
/// NumPy broadcasting: axes are matched from the right, and an axis the operand lacks or holds
/// at size 1 is read with stride 0.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const std::vector<int64_t>& in_strides,
                                              const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[lead + i] = in[i] == 1 ? 0 : in_strides[i];
  return s;
}

/// The same for a contiguous (row-major) operand of shape `in`.
inline std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const size_t lead = out.size() - in.size();
  int64_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    s[lead + i] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return s;
}

/// An iteration space several operands share: its sizes and, per operand, one element stride
/// per size.
struct MergedDims {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
  int rank() const { return static_cast<int>(sizes.size()); }
};

/// Drops the size-1 axes of `sizes` (they move nothing) and merges each axis into the one
/// before it wherever every operand steps through both as one run (the outer stride is the
/// inner stride times the inner size). `strides` holds, per operand, one stride per axis of
/// `sizes`. The result keeps one (possibly empty) stride list per operand.
inline MergedDims merge_dims(const Shape& sizes, const std::vector<std::vector<int64_t>>& strides) {
  const size_t operands = strides.size();
  MergedDims m;
  m.strides.assign(operands, {});
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !m.sizes.empty();
    for (size_t k = 0; k < operands && merge; ++k) merge = m.strides[k].back() == strides[k][d] * sizes[d];
    if (merge) {
      m.sizes.back() *= sizes[d];
      for (size_t k = 0; k < operands; ++k) m.strides[k].back() = strides[k][d];
    } else {
      m.sizes.push_back(sizes[d]);
      for (size_t k = 0; k < operands; ++k) m.strides[k].push_back(strides[k][d]);
    }
  }
  return m;
}

}  // namespace porta::opdef
