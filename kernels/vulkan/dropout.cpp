// Dropout (inference) on vulkan: output = input as a device copy, and the optional mask all
// true (fill.comp). training_mode = true is accepted only with ratio 0 (ops/dropout_util.hpp):
// shape inference checks it when the values are known when compiling, otherwise the kernel.
#include "kernels/vulkan/movement.hpp"
#include "ops/dropout_util.hpp"

namespace porta::vk {
namespace {

void dropout_vulkan(KernelContext& ctx) {
  opdef::require_identity_dropout(ctx.inputs);
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

PORTA_REGISTER_KERNEL(Dropout, vulkan, kFloats, dropout_vulkan, dropout_supports)

}  // namespace porta::vk
