// porta ops — helpers shared by TopK, CumSum, Trilu and Softmax and their kernels.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/common.hpp"
#include "porta/op.hpp"

namespace porta::opdef {

/// A tensor seen as [outer, n, inner] around `axis` (rows of n elements `inner` apart), the
/// geometry TopK, CumSum and Softmax share on every backend. A 0-D tensor (axis 0) is one row
/// of one element.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
inline AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
  AxisSplit g;
  g.n = shape.empty() ? 1 : shape.at(static_cast<size_t>(axis));
  for (int64_t i = 0; i < axis; ++i) g.outer *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) g.inner *= shape[i];
  return g;
}
/// The split of input 0 around the call's `axis` attribute (normalised: a ShapeError naming
/// the op when out of range), as Softmax and LogSoftmax read it.
inline AxisSplit split_at_axis_attr(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  return split_at_axis(x.shape(), normalize_axis(ctx.attrs->get_int("axis"), x.rank(), ctx.op->name));
}

/// TopK's geometry for a call: input 0 split into rows around the normalised `axis` (a
/// ShapeError naming TopK when out of range) and k, output 0's extent along it.
struct TopKRows {
  int64_t axis = 0, outer = 1, n = 1, inner = 1, k = 0;
};
inline TopKRows topk_rows(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  TopKRows t;
  t.axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "TopK");
  const AxisSplit rows = split_at_axis(x.shape(), t.axis);
  t.outer = rows.outer;
  t.n = rows.n;
  t.inner = rows.inner;
  t.k = ctx.outputs.at(0).shape().at(static_cast<size_t>(t.axis));
  return t;
}
/// The length of TopK's rows for a `supports` check, before any output exists; -1 for a
/// scalar input or an axis out of range (inference reports those).
inline int64_t topk_row_length(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.rank() == 0) return -1;
  try {
    return x.shape()[static_cast<size_t>(normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "TopK"))];
  } catch (const Error&) {
    return -1;
  }
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
