// Softmax and LogSoftmax on vulkan (opset 13: one axis): softmax.comp, one workgroup per row.
// Rows whose loops exceed the driver's cap on loop iterations per invocation (vk_kernel.hpp's
// loop_limit) decline.
#include <algorithm>

#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/order_util.hpp"

namespace porta::vk {
namespace {

// Upper bound of the loop iterations of one softmax.comp invocation for rows of R elements
// (vk_kernel.hpp's count: a loop costs its iterations plus one, a barrier one): three passes
// over the row by a workgroup of 256 (maximum, sum of exponentials, output) and two workgroup
// reductions of reduce.glsl (W = 256 / subgroup-size + 4 with subgroup arithmetic, 36 on
// lavapipe; 20 for the tree):
//   3 * (ceil(R / 256) + 1) + 2 * W
// On lavapipe (cap 65535, 57344 after the margin) rows up to 4,886,784 elements fit.
uint64_t softmax_loops(const KernelContext& ctx, int64_t R) {
  uint64_t pass = (static_cast<uint64_t>(R) + 255) / 256 + 1;
  uint64_t w = reduction_strategy(ctx) == 0 ? 20 : 256 / std::max<uint64_t>(device_caps(ctx).subgroup_size, 1) + 4;
  return 3 * pass + 2 * w;
}

// Rows of R elements `inner` apart: push constants rows, R, inner (ops/order_util.hpp's split).
template <int Log>
void softmax_vulkan(KernelContext& ctx) {
  if (ctx.in(0).numel() == 0) return;
  const opdef::AxisSplit g = opdef::split_at_axis_attr(ctx);
  const uint64_t rows = static_cast<uint64_t>(g.outer * g.inner);
  Launch l;
  l.shader = "softmax";
  l.variant = variant_for(ctx.in(0).dtype());
  l.spec = {Log, reduction_strategy(ctx)};
  l.args = {input(ctx.in(0)), output(ctx.out(0))};
  for (int64_t v : {g.outer * g.inner, g.n, g.inner}) l.push_u(v);
  set_grid(l, device_caps(ctx), rows);
  launch(ctx, std::move(l));
}

std::string softmax_supports(const KernelContext& ctx) {
  if (auto why = reductions_ok(ctx); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  int64_t R = 1;  // with a bad axis the kernel raises inference's error
  try {
    R = opdef::split_at_axis_attr(ctx).n;
  } catch (const ShapeError&) {
  }
  if (auto why = loop_budget_ok(ctx, softmax_loops(ctx, R), str("a row of ", R, " elements")); !why.empty())
    return why;
  return fits_bindings(ctx);
}

// ---- "rows": one invocation per innermost-axis row, read as texels (CPU-like devices) --------

template <int Log>
void softmax_rows_vulkan(KernelContext& ctx) {
  if (ctx.in(0).numel() == 0) return;
  const opdef::AxisSplit g = opdef::split_at_axis_attr(ctx);
  const uint64_t rows = static_cast<uint64_t>(g.outer);
  const bool scalar = g.n % 4 != 0;  // rows of any length, one element per texel
  Launch l;
  l.shader = "softmax_rows";
  l.variant = variant_for(ctx.in(0).dtype());
  l.spec = {Log, scalar ? 1 : 0};
  l.local_size = 64;
  l.args = {scalar ? scalar_texels(ctx.in(0)) : texels(ctx.in(0)), output(ctx.out(0)), output(ctx.out(0))};
  l.push_u(rows);
  l.push_u(scalar ? g.n : g.n / 4);
  set_grid(l, device_caps(ctx), (rows + 63) / 64);
  launch(ctx, std::move(l));
}

std::string softmax_rows_supports(const KernelContext& ctx) {
  const DeviceCaps& caps = device_caps(ctx);
  DType t = ctx.in(0).dtype();
  if (auto why = float_texels_ok(ctx, t, "a workgroup per row"); !why.empty()) return why;
  opdef::AxisSplit g;
  try {
    g = opdef::split_at_axis_attr(ctx);
  } catch (const ShapeError&) {
    return fits_bindings(ctx);  // the kernel raises inference's error
  }
  if (g.inner != 1) return "the axis is not the innermost";
  const bool scalar = g.n % 4 != 0;
  if (scalar) {
    if (auto why = scalar_texels_ok(ctx, ctx.in(0)); !why.empty()) return why;
  } else if (static_cast<uint64_t>(ctx.in(0).numel() / 4) > caps.max_texels) {
    return "the input has more texels than the device's maxTexelBufferElements";
  }
  const uint64_t steps = scalar ? static_cast<uint64_t>(g.n) : static_cast<uint64_t>(g.n) / 4;
  if (auto why = loop_budget_ok(ctx, 3 * (steps + 1), str("a row of ", g.n, " elements")); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Softmax, vulkan, kF32 | kF16, softmax_rows_vulkan<0>, softmax_rows_supports,
                      (::porta::KernelImpl{"rows", 10}))
PORTA_REGISTER_KERNEL(Softmax, vulkan, kF32 | kF16, softmax_vulkan<0>, softmax_supports)
PORTA_REGISTER_KERNEL(LogSoftmax, vulkan, kF32 | kF16, softmax_rows_vulkan<1>, softmax_rows_supports,
                      (::porta::KernelImpl{"rows", 10}))
PORTA_REGISTER_KERNEL(LogSoftmax, vulkan, kF32 | kF16, softmax_vulkan<1>, softmax_supports)

}  // namespace porta::vk
