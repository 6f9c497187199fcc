// BiasGelu (ai.porta) on vulkan: bias_gelu.comp, one invocation per element, f32 or f16
// storage with fp32 arithmetic; the gelu form is a specialization constant.
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

void bias_gelu_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t n = y.numel();
  if (n == 0) return;
  const std::string& mode = ctx.attrs->get_string("approximate");
  if (mode != "none" && mode != "tanh")
    throw InvalidModel(str("[BiasGelu] approximate should be 'none' or 'tanh', got '", mode, "'"));
  Launch l;
  l.shader = "bias_gelu";
  l.variant = variant_for(x.dtype());
  l.spec = {mode == "tanh" ? 1 : 0};
  l.args = {input(x), input(ctx.in(1)), output(y)};
  l.push_u(n);
  l.push_u(x.shape().back());
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

std::string bias_gelu_supports(const KernelContext& ctx) {
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(BiasGelu, vulkan, kF32 | kF16, bias_gelu_vulkan, bias_gelu_supports)

}  // namespace porta::vk
