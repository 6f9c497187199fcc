// Relu on vulkan: unary.comp with OP = kRelu.
#include "kernels/vulkan/elementwise.hpp"

namespace porta::vk {
static void relu_vulkan(KernelContext& ctx) { run_unary(ctx, kRelu); }
PORTA_VK_ELEMENTWISE(Relu, kF32 | kF16 | kI64 | kI32 | kI8, relu_vulkan, unary_supports, texel_unary_supports)
}  // namespace porta::vk
