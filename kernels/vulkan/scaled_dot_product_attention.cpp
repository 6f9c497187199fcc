// ScaledDotProductAttention (ai.porta) on vulkan: scaled_dot_product_attention.comp, fused
// with a streaming softmax (one workgroup per 16 queries of a head; nothing of size Sq x Skv
// in device memory). f32. Declines D or Dv above 128 (the shader's shared tiles), and tensors
// beyond one binding; the composite then runs.
#include <cmath>

#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

constexpr int64_t kMaxHeadDim = 128;  // MAX_D of the shader
constexpr int64_t kQueryBlock = 16;   // BQ of the shader

void sdpa_vulkan(KernelContext& ctx) {
  const Shape &qs = ctx.in(0).shape(), &ks = ctx.in(1).shape(), &vs = ctx.in(2).shape();
  int64_t B = qs[0], H = qs[1], Sq = qs[2], D = qs[3], Skv = ks[2], Dv = vs[3];
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  bool has_mask = ctx.has_input(3);
  // Element strides of Mask broadcast to [B, H, Sq, Skv]: 0 on its size-1 or missing axes.
  std::vector<int64_t> mask_stride(4, 0);
  if (has_mask) {
    const Shape& ms = ctx.in(3).shape();
    const Shape full{B, H, Sq, Skv};
    int64_t stride = 1;
    for (size_t j = 0; j < ms.size(); ++j) {
      size_t i = ms.size() - 1 - j, o = 3 - j;
      if (ms[i] != 1 && ms[i] != full[o])
        throw ShapeError(str("[ScaledDotProductAttention] Mask should broadcast to B,H,Sq,Skv = ", shape_str(full),
                             ", got ", shape_str(ms)));
      mask_stride[o] = ms[i] == 1 ? 0 : stride;
      stride *= ms[i];
    }
  }
  double scale = ctx.attrs->has("scale") ? ctx.attrs->get_float("scale") : 1.0 / std::sqrt(static_cast<double>(D));
  int64_t q_blocks = (Sq + kQueryBlock - 1) / kQueryBlock, groups = B * H * q_blocks;
  Launch l;
  l.shader = "scaled_dot_product_attention";
  l.spec = {ctx.attrs->get_int("causal") != 0 ? 1 : 0, has_mask ? 1 : 0};
  // Without a mask its binding is never read; Q stands in for it.
  l.args = {input(ctx.in(0)), input(ctx.in(1)), input(ctx.in(2)), input(has_mask ? ctx.in(3) : ctx.in(0)),
            output(y)};
  for (int64_t v : {H, Sq, Skv, D, Dv, q_blocks, groups}) l.push_u(v);
  l.push_f(scale);
  for (int64_t s : mask_stride) l.push_u(s);
  set_grid(l, device_caps(ctx), groups);
  launch(ctx, std::move(l));
}

std::string sdpa_supports(const KernelContext& ctx) {
  int64_t d = ctx.in(0).shape()[3], dv = ctx.in(2).shape()[3];
  if (d > kMaxHeadDim || dv > kMaxHeadDim)
    return str("head sizes D = ", d, ", Dv = ", dv, " exceed ", kMaxHeadDim,
               " (the fused kernel keeps Q, K and V tiles of up to 128 columns in shared memory)");
  if (device_caps(ctx).shared_memory < 26 * 1024)
    return str("the device has ", device_caps(ctx).shared_memory, " bytes of shared memory, the kernel needs 26 KiB");
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(ScaledDotProductAttention, vulkan, kF32, sdpa_vulkan, sdpa_supports)

}  // namespace porta::vk
