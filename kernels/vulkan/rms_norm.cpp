// RmsNorm (ai.porta) on vulkan: rms_norm.comp, one workgroup per row of the last axis, f32 or
// f16 storage with fp32 accumulation.
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

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
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(RmsNorm, vulkan, kF32 | kF16, rms_norm_vulkan, rms_norm_supports)

}  // namespace porta::vk
