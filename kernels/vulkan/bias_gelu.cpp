// BiasGelu (ai.porta) and Gelu on vulkan: bias_gelu.comp, one invocation per element
// ("elements"), or on CPU-like devices gelu_texel.comp, 4 read as one texel ("texel"); f32 or
// f16 storage with fp32 arithmetic; the gelu form and whether there is a bias are
// specialization constants.
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

void gelu_launch(KernelContext& ctx, bool bias, bool texel = false) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t n = y.numel();
  if (n == 0) return;
  const std::string& mode = ctx.attrs->get_string("approximate");
  if (mode != "none" && mode != "tanh")
    throw InvalidModel(str("[", ctx.op->name, "] approximate should be 'none' or 'tanh', got '", mode, "'"));
  Launch l;
  l.shader = texel ? "gelu_texel" : "bias_gelu";
  l.variant = variant_for(x.dtype());
  l.spec = {mode == "tanh" ? 1 : 0, bias ? 1 : 0};
  if (texel) l.args = {texels(x), input(bias ? ctx.in(1) : x), output(y), output(y)};
  else l.args = {input(x), input(bias ? ctx.in(1) : x), output(y)};
  l.push_u(n);
  l.push_u(bias ? x.shape().back() : 1);
  const uint64_t units = texel ? static_cast<uint64_t>((n + 3) / 4) : static_cast<uint64_t>(n);
  set_grid(l, device_caps(ctx), (units + 255) / 256);
  launch(ctx, std::move(l));
}

void bias_gelu_vulkan(KernelContext& ctx) { gelu_launch(ctx, true); }
void gelu_vulkan(KernelContext& ctx) { gelu_launch(ctx, false); }
void bias_gelu_texel(KernelContext& ctx) { gelu_launch(ctx, true, true); }
void gelu_texel(KernelContext& ctx) { gelu_launch(ctx, false, true); }

std::string bias_gelu_supports(const KernelContext& ctx) {
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  return fits_bindings(ctx);
}

std::string gelu_texel_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "an element per invocation"); !why.empty()) return why;
  if (static_cast<uint64_t>(x.numel() + 3) / 4 > device_caps(ctx).max_texels) return "more texels than maxTexelBufferElements";
  return bias_gelu_supports(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(BiasGelu, vulkan, kF32 | kF16, bias_gelu_texel, gelu_texel_supports, (KernelImpl{"texel", 1}))
PORTA_REGISTER_KERNEL(BiasGelu, vulkan, kF32 | kF16, bias_gelu_vulkan, bias_gelu_supports, (KernelImpl{"elements", 0}))
PORTA_REGISTER_KERNEL(Gelu, vulkan, kF32 | kF16, gelu_texel, gelu_texel_supports, (KernelImpl{"texel", 1}))
PORTA_REGISTER_KERNEL(Gelu, vulkan, kF32 | kF16, gelu_vulkan, bias_gelu_supports, (KernelImpl{"elements", 0}))

}  // namespace porta::vk
