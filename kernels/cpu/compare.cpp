// Equal, Less, Greater on cpu: broadcasting loops writing bool.
#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

void equal_cpu(KernelContext& ctx) { ew::binary_apply<kAllTypes, true>(ctx, [](auto a, auto b) { return a == b; }); }
void less_cpu(KernelContext& ctx) { ew::binary_apply<kNumeric, true>(ctx, [](auto a, auto b) { return a < b; }); }
void greater_cpu(KernelContext& ctx) { ew::binary_apply<kNumeric, true>(ctx, [](auto a, auto b) { return a > b; }); }

}  // namespace

PORTA_REGISTER_KERNEL(Equal, cpu, kAllTypes, equal_cpu)
PORTA_REGISTER_KERNEL(Less, cpu, kNumeric, less_cpu)
PORTA_REGISTER_KERNEL(Greater, cpu, kNumeric, greater_cpu)

}  // namespace porta::cpu
