// Slice on vulkan (opset 13: starts, ends, axes?, steps? as inputs): copy.comp reading the
// input at start + coordinate * step along each sliced axis (negative steps included), the
// view of ops/view_util.hpp.
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

void slice_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  run_copy(ctx, x, opdef::slice_view(opdef::dense_view(x.shape()), opdef::slice_geometry_of(ctx)), y,
           opdef::dense_view(y.shape()));
}

}  // namespace

PORTA_REGISTER_KERNEL(Slice, vulkan, kAllTypes, slice_vulkan, copy_supports)

}  // namespace porta::vk
