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
  if (ctx.out(0).numel() == 0) return;
  const Tensor& x = ctx.in(0);
  const opdef::TopKRows rows = opdef::topk_rows(ctx);
  Launch l;
  l.shader = "topk";
  l.variant = numeric_variant(x.dtype());
  l.spec = {ctx.attrs->get_int("largest") != 0 ? 1 : 0};
  l.args = {input(x), output(ctx.out(0)), output(ctx.out(1))};
  for (int64_t v : {x.numel(), rows.n, rows.inner, rows.k}) l.push_u(v);
  set_grid(l, device_caps(ctx), (x.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

std::string topk_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = numeric_ok(ctx, x.dtype()); !why.empty()) return why;
  const int64_t n = opdef::topk_row_length(ctx);
  if (n < 0) return "";  // inference reports it
  if (auto why = loop_budget_ok(ctx, static_cast<uint64_t>(n) + 1, str("ranking a TopK row of ", n, " elements"));
      !why.empty())
    return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(TopK, vulkan, kNumericVariants, topk_vulkan, topk_supports)

}  // namespace porta::vk
