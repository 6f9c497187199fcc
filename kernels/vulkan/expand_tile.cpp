// Expand and Tile on vulkan: copy.comp over the output; Expand reads broadcast axes with
// stride 0, Tile wraps each coordinate around the input's extent (src_mod).
#include "kernels/vulkan/movement.hpp"
#include "ops/broadcast_util.hpp"

namespace porta::vk {
namespace {

void expand_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  opdef::StridedView from{y.shape(), opdef::broadcast_strides(x.shape(), y.shape()), 0};
  run_copy(ctx, x, from, y, opdef::dense_view(y.shape()));
}

void tile_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (x.rank() != y.rank()) throw ShapeError(str("[Tile] output rank ", y.rank(), " differs from input rank ", x.rank()));
  std::vector<int64_t> xs = strides_of(x.shape()), ys = strides_of(y.shape());
  CopyPlan plan;
  for (int i = 0; i < y.rank(); ++i) plan.axis(y.shape()[i], xs[i], ys[i], x.shape()[i]);
  run_copy(ctx, x, y, plan);
}

// The output rank is the length of the shape/repeats input (or the input's rank).
std::string movement_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  int rank = std::max<int>(ctx.in(0).rank(), ctx.has_input(1) ? static_cast<int>(ctx.in(1).numel()) : 0);
  if (auto why = rank_ok(rank); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Expand, vulkan, kAllTypes, expand_vulkan, movement_supports)
PORTA_REGISTER_KERNEL(Tile, vulkan, kAllTypes, tile_vulkan, movement_supports)

}  // namespace porta::vk
