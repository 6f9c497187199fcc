// porta ops — what the fused ScaledDotProductAttention kernels of every backend share: the
// Mask's broadcast strides and the head-size limit check. Plain C++ (the CUDA/HIP sources
// include it as host code).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/broadcast_util.hpp"
#include "porta/op.hpp"
#include "porta/util.hpp"

namespace porta::opdef {

/// Element strides of Mask (input 3) read as [B, H, Sq, Skv]: 0 along its size-1 or missing
/// axes (inference checked that it broadcasts); four 0s when there is no Mask.
inline std::vector<int64_t> attention_mask_strides(const KernelContext& ctx) {
  if (!ctx.has_input(3)) return std::vector<int64_t>(4, 0);
  const Shape &q = ctx.in(0).shape(), &k = ctx.in(1).shape();
  const Tensor& mask = ctx.in(3);
  return broadcast_strides(mask.shape(), mask.strides(), {q[0], q[1], q[2], k[2]});
}

/// "" when Q's head size D and V's Dv are at most `max_head`, else the reason a fused kernel
/// declines, ending with `why` (what it keeps per head).
inline std::string attention_heads_fit(const KernelContext& ctx, int64_t max_head, std::string_view why) {
  const int64_t d = ctx.in(0).shape()[3], dv = ctx.in(2).shape()[3];
  if (d <= max_head && dv <= max_head) return "";
  return str("head sizes D = ", d, ", Dv = ", dv, " exceed ", max_head, " (", why, ")");
}

}  // namespace porta::opdef
