// Reshape, Flatten, Squeeze, Unsqueeze, Identity on vulkan: the output holds the input's
// elements in the same order, so the kernel is one device-to-device copy (no host round
// trip). Sessions may alias instead (OpSchema::alias_input0).
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

void same_elements_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() != x.numel())
    throw ShapeError(str("[", ctx.op->name, "] output has ", y.numel(), " elements, input ", x.numel()));
  if (y.numel() == 0) return;
  y.copy_(x.reshape(y.shape()));
}

}  // namespace

PORTA_REGISTER_KERNEL(Reshape, vulkan, kAllTypes, same_elements_vulkan)
PORTA_REGISTER_KERNEL(Flatten, vulkan, kAllTypes, same_elements_vulkan)
PORTA_REGISTER_KERNEL(Squeeze, vulkan, kAllTypes, same_elements_vulkan)
PORTA_REGISTER_KERNEL(Unsqueeze, vulkan, kAllTypes, same_elements_vulkan)
PORTA_REGISTER_KERNEL(Identity, vulkan, kAllTypes, same_elements_vulkan)

}  // namespace porta::vk
