// Expand and Tile on cpu: both are strided views of the input (stride 0 along repeated
// axes; Tile's from ops/view_util.hpp) copied into the output.
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "ops/view_util.hpp"

namespace porta::cpu {

static void expand_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (y.numel() > 0) copy_strided(ctx.in(0).expand(y.shape()), y);
}

static void tile_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::TileViews t = opdef::tile_views(opdef::view_of(x), opdef::view_of(y));
  copy_strided(x.as_strided(t.src.shape, t.src.strides, t.src.offset),
               y.as_strided(t.dst.shape, t.dst.strides, t.dst.offset));
}

PORTA_REGISTER_KERNEL(Expand, cpu, kAllTypes, expand_cpu)
PORTA_REGISTER_KERNEL(Tile, cpu, kAllTypes, tile_cpu)

}  // namespace porta::cpu
