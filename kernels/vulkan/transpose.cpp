// Transpose on vulkan: copy.comp with the input strides permuted (perm defaults to reversed
// axes, as in ONNX).
#include "kernels/vulkan/movement.hpp"
#include "ops/shape_util.hpp"

namespace porta::vk {
namespace {

void transpose_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> perm =
      opdef::transpose_perm(static_cast<size_t>(x.rank()), ctx.attrs->get_ints("perm", {}), "Transpose");
  std::vector<int64_t> xs = strides_of(x.shape()), ys = strides_of(y.shape());
  CopyPlan plan;
  for (int i = 0; i < y.rank(); ++i) plan.axis(y.shape()[i], xs[perm[i]], ys[i]);
  run_copy(ctx, x, y, plan);
}

}  // namespace

PORTA_REGISTER_KERNEL(Transpose, vulkan, kAllTypes, transpose_vulkan, copy_supports)

}  // namespace porta::vk
