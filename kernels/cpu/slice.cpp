// Slice on cpu: the input viewed with offset starts and strided steps (negative included),
// copied out.
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "ops/shape_util.hpp"

namespace porta::cpu {

static void slice_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::SliceGeometry g = opdef::slice_geometry(
      x.shape(), opdef::optional_ints(ctx, 1), opdef::optional_ints(ctx, 2),
      opdef::optional_ints(ctx, 3), opdef::optional_ints(ctx, 4), "Slice");
  int64_t offset = x.offset();
  std::vector<int64_t> strides(x.rank());
  for (int i = 0; i < x.rank(); ++i) {
    offset += g.start[i] * x.strides()[i];
    strides[i] = g.step[i] * x.strides()[i];
  }
  copy_strided(x.as_strided(y.shape(), strides, offset), y);
}

PORTA_REGISTER_KERNEL(Slice, cpu, kAllTypes, slice_cpu)

}  // namespace porta::cpu
