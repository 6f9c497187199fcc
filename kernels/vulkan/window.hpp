// porta vulkan kernels — what the window kernels (pool.cpp, conv.cpp) share: their push
// constants for up to three spatial axes and the checks every window call passes.
#pragma once
#include <string>
#include <vector>

#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {

inline constexpr size_t kMaxSpatial = 3;

/// Pushes v padded to three axes with `fill`.
inline void push3(Launch& l, const std::vector<int64_t>& v, int64_t fill = 1) {
  for (size_t d = 0; d < kMaxSpatial; ++d) l.push_i(d < v.size() ? v[d] : fill);
}

/// "" when the device takes the call's dtype (f16 storage), its rank has 1 to 3 spatial axes
/// and every operand has input 0's dtype; else the reason to decline.
inline std::string window_operands_ok(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = fp16_ok(ctx, x.dtype()); !why.empty()) return why;
  if (x.rank() < 3 || x.rank() > 2 + static_cast<int>(kMaxSpatial))
    return str("input of rank ", x.rank(), " (1 to ", kMaxSpatial, " spatial axes are native)");
  for (const Tensor& t : ctx.inputs)
    if (t.defined() && t.dtype() != x.dtype()) return "operands of different dtypes";
  return "";
}

}  // namespace porta::vk
