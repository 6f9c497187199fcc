// BiasGelu (ai.porta) and Gelu on vulkan: bias_gelu.comp, one invocation per element, f32 or
// f16 storage with fp32 arithmetic; the gelu form and whether there is a bias are
// specialization constants.
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

void gelu_launch(KernelContext& ctx, bool bias) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t n = y.numel();
  if (n == 0) return;
  const std::string& mode = ctx.attrs->get_string("approximate");
  if (mode != "none" && mode != "tanh")
    throw InvalidModel(str("[", ctx.op->name, "] approximate should be 'none' or 'tanh', got '", mode, "'"));
  Launch l;
  l.shader = "bias_gelu";
  l.variant = variant_for(x.dtype());
  l.spec = {mode == "tanh" ? 1 : 0, bias ? 1 : 0};
  l.args = {input(x), input(bias ? ctx.in(1) : x), output(y)};
  l.push_u(n);
  l.push_u(bias ? x.shape().back() : 1);
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

void bias_gelu_vulkan(KernelContext& ctx) { gelu_launch(ctx, true); }
void gelu_vulkan(KernelContext& ctx) { gelu_launch(ctx, false); }

std::string bias_gelu_supports(const KernelContext& ctx) {
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(BiasGelu, vulkan, kF32 | kF16, bias_gelu_vulkan, bias_gelu_supports)
PORTA_REGISTER_KERNEL(Gelu, vulkan, kF32 | kF16, gelu_vulkan, bias_gelu_supports)

}  // namespace porta::vk
