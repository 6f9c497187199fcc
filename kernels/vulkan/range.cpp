// Range on vulkan: range.comp fills start + i * delta. The output length comes from shape
// inference, which read start/limit/delta on the host (Range's host_inputs); the shader reads
// start and delta from the device tensors, so the kernel itself waits for nothing.
#include "kernels/vulkan/elementwise.hpp"

namespace porta::vk {
namespace {

void range_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  Launch l;
  l.shader = "range";
  l.variant = numeric_variant(y.dtype());
  l.args = {input(ctx.in(0)), input(ctx.in(2)), output(y)};
  l.push_u(y.numel());
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

std::string range_supports(const KernelContext& ctx) {
  if (auto why = numeric_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Range, vulkan, kNumericVariants, range_vulkan, range_supports)

}  // namespace porta::vk
