// Transpose on vulkan: copy.comp with the input strides permuted (perm defaults to reversed
// axes, as in ONNX).
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

std::vector<int64_t> permutation(const KernelContext& ctx) {
  int r = ctx.in(0).rank();
  std::vector<int64_t> perm;
  if (ctx.attrs->has("perm")) perm = ctx.attrs->get_ints("perm");
  if (perm.empty())
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int>(perm.size()) != r)
    throw ShapeError(str("[Transpose] perm has ", perm.size(), " axes, input has rank ", r));
  for (auto& p : perm) {
    if (p < -r || p >= r) throw ShapeError(str("[Transpose] perm axis ", p, " out of range for rank ", r));
    if (p < 0) p += r;
  }
  return perm;
}

void transpose_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> perm = permutation(ctx);
  std::vector<int64_t> xs = strides_of(x.shape()), ys = strides_of(y.shape());
  CopyPlan plan;
  for (int i = 0; i < y.rank(); ++i) plan.axis(y.shape()[i], xs[perm[i]], ys[i]);
  run_copy(ctx, x, y, plan);
}

std::string transpose_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (auto why = rank_ok(ctx.in(0).rank()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(Transpose, vulkan, kAllTypes, transpose_vulkan, transpose_supports)

}  // namespace porta::vk
