// Softmax and LogSoftmax on vulkan (opset 13: one axis): softmax.comp, one workgroup per row.
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

template <int Log>
void softmax_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (x.numel() == 0) return;
  int r = x.rank();
  int64_t axis = ctx.attrs->get_int("axis", -1);
  if (r == 0) axis = 0;
  else if (axis < -r || axis >= r) throw ShapeError(str("[", ctx.op->name, "] axis ", axis, " out of range for rank ", r));
  if (axis < 0) axis += r;
  int64_t R = r == 0 ? 1 : x.shape()[axis], inner = 1;
  for (int i = static_cast<int>(axis) + 1; i < r; ++i) inner *= x.shape()[i];
  int64_t rows = x.numel() / R;
  Launch l;
  l.shader = "softmax";
  l.variant = variant_for(x.dtype());
  l.spec = {Log, reduction_strategy(ctx)};
  l.args = {input(x), output(y)};
  l.push_u(rows);
  l.push_u(R);
  l.push_u(inner);
  set_grid(l, device_caps(ctx), rows);
  launch(ctx, std::move(l));
}

std::string softmax_supports(const KernelContext& ctx) {
  if (auto why = reductions_ok(ctx); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(Softmax, vulkan, kF32 | kF16, softmax_vulkan<0>, softmax_supports)
PORTA_REGISTER_KERNEL_IF(LogSoftmax, vulkan, kF32 | kF16, softmax_vulkan<1>, softmax_supports)

}  // namespace porta::vk
