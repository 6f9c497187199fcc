// Concat and Split on vulkan: one copy.comp dispatch per input (Concat) or output (Split),
// placing it in its window along the axis (ops/view_util.hpp).
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

void concat_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  opdef::AxisParts p = opdef::concat_parts(ctx);
  const opdef::StridedView whole = opdef::dense_view(y.shape());
  for (const opdef::AxisPart& part : p.parts) {
    const Tensor& x = ctx.in(part.index);
    run_copy(ctx, x, opdef::dense_view(x.shape()), y, opdef::axis_window(whole, p.axis, part.begin, part.size));
  }
}

void split_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  opdef::AxisParts p = opdef::split_parts(ctx);
  const opdef::StridedView whole = opdef::dense_view(x.shape());
  for (const opdef::AxisPart& part : p.parts) {
    Tensor& y = ctx.out(part.index);
    run_copy(ctx, x, opdef::axis_window(whole, p.axis, part.begin, part.size), y, opdef::dense_view(y.shape()));
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

PORTA_REGISTER_KERNEL(Concat, vulkan, kAllTypes, concat_vulkan, concat_split_supports)
PORTA_REGISTER_KERNEL(Split, vulkan, kAllTypes, split_vulkan, concat_split_supports)

}  // namespace porta::vk
