// TopK on vulkan: topk.comp, one invocation per input element counting its rank in its row
// (O(n) per element, O(n^2) per row of n), so rows must fit the driver's loop cap: a row of n
// costs n + 1 loop iterations per invocation (vk_kernel.hpp's count); longer rows decline
// (lavapipe: about 57000 elements; then the CPU kernel runs). K comes from the output shape.
#include "kernels/vulkan/elementwise.hpp"
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::vk {
namespace {

void topk_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor &values = ctx.out(0), &indices = ctx.out(1);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "TopK");
  const opdef::AxisSplit rows = opdef::split_at_axis(x.shape(), axis);
  int64_t n = rows.n, inner = rows.inner;
  int64_t k = values.shape()[axis];
  if (values.numel() == 0) return;
  Launch l;
  l.shader = "topk";
  l.variant = numeric_variant(x.dtype());
  l.spec = {ctx.attrs->get_int("largest") != 0 ? 1 : 0};
  l.args = {input(x), output(values), output(indices)};
  l.push_u(x.numel());
  l.push_u(n);
  l.push_u(inner);
  l.push_u(k);
  set_grid(l, device_caps(ctx), (x.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

std::string topk_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = numeric_ok(ctx, x.dtype()); !why.empty()) return why;
  if (x.rank() == 0) return "";  // infer rejects it
  int64_t axis = 0;
  try {
    axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "TopK");
  } catch (const Error&) {
    return "";  // infer reports it
  }
  int64_t n = x.shape()[axis];
  if (auto why = loop_budget_ok(ctx, static_cast<uint64_t>(n) + 1, str("ranking a TopK row of ", n, " elements"));
      !why.empty())
    return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(TopK, vulkan, kNumericVariants, topk_vulkan, topk_supports)

}  // namespace porta::vk
