// Expand and Tile on cpu: both are strided views of the input (stride 0 along repeated
// axes) copied into the output.
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"

namespace porta::cpu {

static void expand_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (y.numel() > 0) copy_strided(ctx.in(0).expand(y.shape()), y);
}

// Output axis i of size r*d is viewed as two axes (r, d); the input is read with stride 0
// along r and its own stride along d.
static void tile_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  Shape split;
  std::vector<int64_t> src_strides;
  for (int i = 0; i < x.rank(); ++i) {
    int64_t d = x.shape()[i];
    split.push_back(y.shape()[i] / d);
    split.push_back(d);
    src_strides.push_back(0);
    src_strides.push_back(x.strides()[i]);
  }
  Tensor src = x.as_strided(split, src_strides, x.offset());
  Tensor dst = y.as_strided(split, contiguous_strides(split), y.offset());
  copy_strided(src, dst);
}

PORTA_REGISTER_KERNEL(Expand, cpu, kAllTypes, expand_cpu)
PORTA_REGISTER_KERNEL(Tile, cpu, kAllTypes, tile_cpu)

}  // namespace porta::cpu
