// Slice on cpu: the input viewed with offset starts and strided steps (negative included,
// ops/view_util.hpp), copied out.
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "ops/view_util.hpp"

namespace porta::cpu {

static void slice_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::StridedView v = opdef::slice_view(opdef::view_of(x), opdef::slice_geometry_of(ctx));
  copy_strided(x.as_strided(v.shape, v.strides, v.offset), y);
}

PORTA_REGISTER_KERNEL(Slice, cpu, kAllTypes, slice_cpu)

}  // namespace porta::cpu
