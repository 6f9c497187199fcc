// RotaryEmbedding (ai.porta) on vulkan: rotary_embedding.comp, one invocation per rotated pair
// (f32; interleaved or halves is a specialization constant).
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

void rotary_embedding_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t pairs = y.numel() / 2;
  if (pairs == 0) return;
  int64_t interleaved = ctx.attrs->get_int("interleaved");
  if (interleaved != 0 && interleaved != 1)
    throw InvalidModel(str("[RotaryEmbedding] interleaved should be 0 or 1, got ", interleaved));
  Launch l;
  l.shader = "rotary_embedding";
  l.spec = {static_cast<int32_t>(interleaved)};
  l.args = {input(x), input(ctx.in(1)), input(ctx.in(2)), output(y)};
  l.push_u(pairs);
  l.push_u(x.shape()[2]);
  l.push_u(x.shape()[3] / 2);
  set_grid(l, device_caps(ctx), (pairs + 255) / 256);
  launch(ctx, std::move(l));
}

}  // namespace

PORTA_REGISTER_KERNEL(RotaryEmbedding, vulkan, kF32, rotary_embedding_vulkan, fits_bindings)

}  // namespace porta::vk
