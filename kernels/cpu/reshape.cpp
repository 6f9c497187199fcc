// Reshape, Flatten, Squeeze, Unsqueeze on cpu: one byte copy (skipped when the session made
// the output alias the input).
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"

namespace porta::cpu {

static void reshape_like_cpu(KernelContext& ctx) { copy_if_distinct(ctx.in(0), ctx.out(0)); }

PORTA_REGISTER_KERNEL(Reshape, cpu, kAllTypes, reshape_like_cpu)
PORTA_REGISTER_KERNEL(Flatten, cpu, kAllTypes, reshape_like_cpu)
PORTA_REGISTER_KERNEL(Squeeze, cpu, kAllTypes, reshape_like_cpu)
PORTA_REGISTER_KERNEL(Unsqueeze, cpu, kAllTypes, reshape_like_cpu)

}  // namespace porta::cpu
