// Dropout (inference) on vulkan: output = input as a device copy, and the optional mask all
// true (fill.comp). training_mode = true is Unsupported, as on the CPU: shape inference refuses
// it when the value is known when compiling; otherwise the kernel reads the one-byte flag.
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

void dropout_vulkan(KernelContext& ctx) {
  if (ctx.has_input(2) && ctx.in(2).numel() == 1) {
    uint8_t training = 0;
    ctx.in(2).copy_to_host(&training, 1);
    if (training) throw Unsupported("[Dropout] training_mode must be false (porta runs inference), got true");
  }
  Tensor& y = ctx.out(0);
  if (y.numel() > 0) y.copy_(ctx.in(0));
  if (ctx.outputs.size() > 1 && ctx.out(1).defined() && ctx.out(1).numel() > 0) run_fill_bits(ctx, ctx.out(1), 1);
}

std::string dropout_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (auto why = movable(ctx, DType::boolean); !why.empty()) return why;  // the mask
  // The mask is filled through one binding (one byte per element); the output is a copy.
  uint64_t mask_bytes = static_cast<uint64_t>(ctx.in(0).numel());
  if (mask_bytes > device_caps(ctx).max_storage_range)
    return str("the mask would have ", mask_bytes, " bytes, more than maxStorageBufferRange (",
               device_caps(ctx).max_storage_range, ")");
  return "";
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(Dropout, vulkan, kFloats, dropout_vulkan, dropout_supports)

}  // namespace porta::vk
