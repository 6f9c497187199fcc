// porta vulkan Conv — what the Conv implementations in several files share (conv.cpp defines
// it; conv_winograd.cpp is the "winograd" implementation).
#pragma once
#include <optional>
#include <string>

#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/window.hpp"

namespace porta::vk {

// One call's geometry; ShapeError when the group does not divide the channels.
struct ConvCall {
  opdef::WindowGeometry g;
  Shape k;
  int64_t group = 1, c_in = 0, c_out = 0;
};
ConvCall conv_call(const KernelContext& ctx, bool transposed);

/// What the CPU-like implementations of ungrouped convs ("rows", "winograd") check first: the
/// answer supports gives when they cannot take the call (a reason, or fits_bindings' where
/// inference or the kernel reports the call's error), else nullopt with `c` set.
std::optional<std::string> ungrouped_texel_conv(const KernelContext& ctx, ConvCall& c);

/// A vulkan Conv KernelDef: every Conv implementation applies the residual and activation graph
/// fusion folds into it (activation.glsl), so a session folds them on vulkan as on the cpu.
KernelDef conv_kernel(KernelFn fn, SupportsFn supports, KernelImpl impl);

}  // namespace porta::vk
