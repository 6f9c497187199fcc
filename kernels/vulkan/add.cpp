// Add on vulkan: binary.comp with OP = kAdd.
#include "kernels/vulkan/elementwise.hpp"

namespace porta::vk {
static void add_vulkan(KernelContext& ctx) { run_binary(ctx, kAdd); }
PORTA_VK_ELEMENTWISE(Add, kNumericVariants, add_vulkan, binary_supports, texel_binary_supports)
}  // namespace porta::vk
