// Concat and Split on vulkan: one copy.comp dispatch per input (Concat) or output (Split),
// placing it at its offset along the axis.
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

int64_t axis_of(const KernelContext& ctx, int rank) {
  int64_t axis = ctx.attrs->get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    throw ShapeError(str("[", ctx.op->name, "] axis ", axis, " out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

void concat_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  int64_t axis = axis_of(ctx, y.rank());
  std::vector<int64_t> ys = strides_of(y.shape());
  int64_t offset = 0;
  for (const Tensor& x : ctx.inputs) {
    if (!x.defined()) continue;
    std::vector<int64_t> xs = strides_of(x.shape());
    CopyPlan plan;
    plan.dst_base = offset * ys[axis];
    for (int i = 0; i < x.rank(); ++i) plan.axis(x.shape()[i], xs[i], ys[i]);
    run_copy(ctx, x, y, plan);
    offset += x.shape()[axis];
  }
}

void split_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = axis_of(ctx, x.rank());
  std::vector<int64_t> xs = strides_of(x.shape());
  int64_t offset = 0;
  for (Tensor& y : ctx.outputs) {
    if (!y.defined()) continue;
    std::vector<int64_t> ys = strides_of(y.shape());
    CopyPlan plan;
    plan.src_base = offset * xs[axis];
    for (int i = 0; i < y.rank(); ++i) plan.axis(y.shape()[i], xs[i], ys[i]);
    run_copy(ctx, x, y, plan);
    offset += y.shape()[axis];
  }
}

std::string concat_split_supports(const KernelContext& ctx) {
  size_t total = 0;  // Concat's output holds every input
  for (const Tensor& t : ctx.inputs) {
    if (!t.defined()) continue;
    total += t.nbytes();
    if (auto why = movable(ctx, t.dtype()); !why.empty()) return why;
    if (auto why = rank_ok(t.rank()); !why.empty()) return why;
  }
  if (total > device_caps(ctx).max_storage_range)
    return str("the result has ", total, " bytes, more than maxStorageBufferRange (",
               device_caps(ctx).max_storage_range, ")");
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(Concat, vulkan, kAllTypes, concat_vulkan, concat_split_supports)
PORTA_REGISTER_KERNEL_IF(Split, vulkan, kAllTypes, split_vulkan, concat_split_supports)

}  // namespace porta::vk
