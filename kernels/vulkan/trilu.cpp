// Trilu on vulkan: trilu.comp, one invocation per element over the [batch, rows, cols] view;
// any dtype (moved as raw 8/16/32/64-bit words). k is read on the host (a host input).
#include <algorithm>

#include "kernels/vulkan/movement.hpp"
#include "ops/order_util.hpp"

namespace porta::vk {
namespace {

void trilu_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t k = opdef::trilu_k(ctx);
  if (y.numel() == 0) return;
  int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  Launch l;
  l.shader = "trilu";
  size_t size = dtype_size(y.dtype());
  l.variant = size == 8 ? "b64" : size == 2 ? "b16" : size == 1 ? "b8" : "b32";
  l.spec = {ctx.attrs->get_int("upper") != 0 ? 1 : 0};
  l.args = {input(x), output(y)};
  l.push_u(y.numel());
  l.push_u(rows);
  l.push_u(cols);
  l.push_i(std::clamp<int64_t>(k, -rows - 1, cols + 1));  // same triangle, fits int32
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

std::string trilu_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Trilu, vulkan, kAllTypes, trilu_vulkan, trilu_supports)

}  // namespace porta::vk
