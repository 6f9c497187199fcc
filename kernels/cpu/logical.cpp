// Not, And, Or on cpu over bool storage (one byte, 0 or 1).
#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

void not_cpu(KernelContext& ctx) { ew::unary_apply<kBool>(ctx, [](bool x) { return !x; }); }
void and_cpu(KernelContext& ctx) { ew::binary_apply<kBool, true>(ctx, [](bool a, bool b) { return a && b; }); }
void or_cpu(KernelContext& ctx) { ew::binary_apply<kBool, true>(ctx, [](bool a, bool b) { return a || b; }); }

}  // namespace

PORTA_REGISTER_KERNEL(Not, cpu, kBool, not_cpu)
PORTA_REGISTER_KERNEL(And, cpu, kBool, and_cpu)
PORTA_REGISTER_KERNEL(Or, cpu, kBool, or_cpu)

}  // namespace porta::cpu
