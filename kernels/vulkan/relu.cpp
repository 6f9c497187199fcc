// Relu on vulkan: unary.comp with OP = kRelu.
#include "kernels/vulkan/elementwise.hpp"

namespace porta::vk {
static void relu_vulkan(KernelContext& ctx) { run_unary(ctx, kRelu); }
PORTA_REGISTER_KERNEL(Relu, vulkan, kF32 | kF16 | kI64 | kI32 | kI8, relu_vulkan, unary_supports)
}  // namespace porta::vk
