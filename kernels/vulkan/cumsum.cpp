// CumSum on vulkan: cumsum.comp, one invocation per line along the axis. Loop cap
// (vk_kernel.hpp's loop_limit): a line of n steps costs n + 1 loop iterations per invocation,
// so lines longer than the cap allows are split into segments of limit - 1 steps, one dispatch
// each, with the running sums carried between them in a scratch buffer (two words per line).
// The axis is read on the host (a host input).
#include <algorithm>

#include "kernels/vulkan/elementwise.hpp"
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::vk {
namespace {

void cumsum_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::cumsum_axis(ctx);
  if (y.numel() == 0) return;
  const opdef::AxisSplit rows = opdef::split_at_axis(x.shape(), axis);
  int64_t n = rows.n, inner = rows.inner;
  uint64_t lines = static_cast<uint64_t>(x.numel() / n);
  uint64_t limit = loop_limit(ctx);
  if (limit < 2) throw BackendError("[CumSum] the loop cap leaves no step per dispatch (supports should decline)");
  uint64_t steps = std::min<uint64_t>(static_cast<uint64_t>(n), limit - 1);  // per dispatch
  uint32_t flags = (ctx.attrs->get_int("exclusive") != 0 ? 1u : 0u) | (ctx.attrs->get_int("reverse") != 0 ? 2u : 0u);
  bool split = steps < static_cast<uint64_t>(n);
  Tensor carry = Tensor::empty({static_cast<int64_t>(split ? 2 * lines : 2)}, DType::i32, ctx.device);
  for (uint64_t begin = 0; begin < static_cast<uint64_t>(n); begin += steps) {
    uint64_t end = std::min<uint64_t>(begin + steps, static_cast<uint64_t>(n));
    Launch l;
    l.shader = "cumsum";
    l.variant = numeric_variant(x.dtype());
    l.args = {input(x), output(y), output(carry)};
    l.push_u(lines);
    l.push_u(n);
    l.push_u(inner);
    l.push_u(begin);
    l.push_u(end);
    l.push_u(flags | (begin > 0 ? 4u : 0u) | (end < static_cast<uint64_t>(n) ? 8u : 0u));
    set_grid(l, device_caps(ctx), (lines + 255) / 256);
    launch(ctx, std::move(l));
  }
}

std::string cumsum_supports(const KernelContext& ctx) {
  if (auto why = numeric_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  // Lines of any length split over dispatches; one step per dispatch must fit.
  if (auto why = loop_budget_ok(ctx, 2, "one step of a CumSum line per dispatch"); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(CumSum, vulkan, kF32 | kF16 | kI32 | kI64, cumsum_vulkan, cumsum_supports)

}  // namespace porta::vk
