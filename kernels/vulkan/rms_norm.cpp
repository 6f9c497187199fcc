// RmsNorm (ai.porta) on vulkan, f32 or f16 storage with fp32 accumulation:
// - "rows" (CPU-like devices, tried first): rms_norm_rows.comp, one invocation per row of a
//   multiple of 4 elements, read as vec4 texels, no barriers;
// - rms_norm.comp: one workgroup per row of the last axis.
// Rows whose loops exceed the driver's cap on loop iterations per invocation (vk_kernel.hpp's
// loop_limit) decline.
#include <algorithm>

#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

// Upper bound of the loop iterations of one rms_norm.comp invocation for rows of D elements
// (vk_kernel.hpp's count: a loop costs its iterations plus one, a barrier one): two passes over
// the row by a workgroup of 256 (sum of squares, output) and one workgroup_sum of reduce.glsl
// (W = 256 / subgroup-size + 4 with subgroup arithmetic, 36 on lavapipe; 20 for the tree):
//   2 * (ceil(D / 256) + 1) + W
// On lavapipe (cap 65535, 57344 after the margin) rows up to 7,335,168 elements fit.
uint64_t rms_norm_loops(const KernelContext& ctx, int64_t D) {
  uint64_t pass = (static_cast<uint64_t>(D) + 255) / 256 + 1;
  uint64_t w = reduction_strategy(ctx) == 0 ? 20 : 256 / std::max<uint64_t>(device_caps(ctx).subgroup_size, 1) + 4;
  return 2 * pass + w;
}

void rms_norm_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;  // no rows, or rows of length 0
  int64_t d = x.shape().back(), rows = x.numel() / d;
  Launch l;
  l.shader = "rms_norm";
  l.variant = variant_for(x.dtype());
  l.spec = {0, reduction_strategy(ctx)};  // constant 1 unused; 2 is reduce.glsl's SUBGROUPS
  l.args = {input(x), input(ctx.in(1)), output(y)};
  l.push_u(rows);
  l.push_u(d);
  l.push_f(ctx.attrs->get_float("epsilon"));
  set_grid(l, device_caps(ctx), rows);
  launch(ctx, std::move(l));
}

std::string rms_norm_supports(const KernelContext& ctx) {
  if (auto why = reductions_ok(ctx); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  int64_t D = ctx.in(0).rank() ? ctx.in(0).shape().back() : 1;
  if (auto why = loop_budget_ok(ctx, rms_norm_loops(ctx, D), str("a row of ", D, " elements")); !why.empty())
    return why;
  return fits_bindings(ctx);
}

void rms_norm_rows_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const int64_t d = x.shape().back(), rows = x.numel() / d;
  Launch l;
  l.shader = "rms_norm_rows";
  l.variant = variant_for(x.dtype());
  l.local_size = 64;
  l.args = {texels(x), texels(ctx.in(1)), output(y)};
  l.push_u(rows);
  l.push_u(d / 4);
  l.push_f(ctx.attrs->get_float("epsilon"));
  set_grid(l, device_caps(ctx), (rows + 63) / 64);
  launch(ctx, std::move(l));
}

std::string rms_norm_rows_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "a workgroup per row"); !why.empty()) return why;
  const int64_t D = x.rank() ? x.shape().back() : 1;
  if (D == 0 || D % 4) return str("rows of ", D, " elements (texels of 4 need a positive multiple of 4)");
  if (static_cast<uint64_t>(x.numel() / 4) > device_caps(ctx).max_texels)
    return "the input has more texels than the device's maxTexelBufferElements";
  // Two passes over the row.
  if (auto why = loop_budget_ok(ctx, 2 * (static_cast<uint64_t>(D) / 4 + 1), str("a row of ", D, " elements")); !why.empty())
    return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(RmsNorm, vulkan, kF32 | kF16, rms_norm_rows_vulkan, rms_norm_rows_supports,
                      (::porta::KernelImpl{"rows", 10}))
PORTA_REGISTER_KERNEL(RmsNorm, vulkan, kF32 | kF16, rms_norm_vulkan, rms_norm_supports)

}  // namespace porta::vk
