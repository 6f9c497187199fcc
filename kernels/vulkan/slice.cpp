// Slice on vulkan (opset 13: starts, ends, axes?, steps? as inputs): copy.comp reading the
// input at start + coordinate * step along each sliced axis (negative steps included), the
// view of ops/view_util.hpp. StridedCopy (ai.porta): copy.comp reading the view its attributes
// give.
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

void slice_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  run_copy(ctx, x, opdef::slice_view(opdef::dense_view(x.shape()), opdef::slice_geometry_of(ctx)), y,
           opdef::dense_view(y.shape()));
}

void strided_copy_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const opdef::StridedView v = opdef::strided_copy_view(ctx);
  run_copy(ctx, x, v, y, opdef::dense_view(v.shape));
}

// copy_supports, with the rank of the view (its dims, before run_copy merges any) instead of X's.
std::string strided_copy_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  try {
    if (auto why = rank_ok(static_cast<int>(opdef::strided_copy_view(ctx).shape.size())); !why.empty()) return why;
  } catch (const Error&) {
    // a view outside the input: the kernel reports the same error
  }
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Slice, vulkan, kAllTypes, slice_vulkan, copy_supports)
PORTA_REGISTER_KERNEL(StridedCopy, vulkan, kAllTypes, strided_copy_vulkan, strided_copy_supports)

}  // namespace porta::vk
