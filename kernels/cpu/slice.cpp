// Slice on cpu: the input viewed with offset starts and strided steps (negative included,
// ops/view_util.hpp), copied out; StridedCopy (ai.porta): the view its attributes give.
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

static void strided_copy_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  opdef::StridedView v = opdef::strided_copy_view(ctx);
  if (y.numel() == 0) return;
  copy_strided(x.as_strided(v.shape, v.strides, x.offset() + v.offset), y.reshape(v.shape));
}

PORTA_REGISTER_KERNEL(Slice, cpu, kAllTypes, slice_cpu)
PORTA_REGISTER_KERNEL(StridedCopy, cpu, kAllTypes, strided_copy_cpu)

}  // namespace porta::cpu
