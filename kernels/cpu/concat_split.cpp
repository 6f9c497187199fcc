// Concat and Split on cpu: each input (output) is copied into (out of) its window of the other
// along the axis (ops/view_util.hpp).
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "ops/view_util.hpp"

namespace porta::cpu {

static void concat_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  opdef::AxisParts p = opdef::concat_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.in(part.index).numel() > 0)
      copy_strided(ctx.in(part.index), y.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size));
}

static void split_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  opdef::AxisParts p = opdef::split_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.out(part.index).numel() > 0)
      copy_strided(x.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size), ctx.out(part.index));
}

PORTA_REGISTER_KERNEL(Concat, cpu, kAllTypes, concat_cpu)
PORTA_REGISTER_KERNEL(Split, cpu, kAllTypes, split_cpu)

}  // namespace porta::cpu
