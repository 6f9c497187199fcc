// porta vulkan kernels — launchers for the elementwise families (unary.comp, binary.comp),
// shared by the per-op registration files.
#pragma once
#include <array>

#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {

/// Unary op codes: the OP specialization constant of unary.comp.
enum UnaryOp : int {
  kRelu = 0, kAbs, kNeg, kExp, kLog, kSqrt, kReciprocal, kTanh, kSigmoid, kLeakyRelu, kElu,
  kErf, kSin, kCos, kFloor, kCeil, kSign, kSoftplus, kHardSigmoid, kRound, kSelu, kHardSwish,
  kTan, kSoftsign, kClip, kCelu
};
/// Binary op codes: the OP specialization constant of binary.comp.
enum BinaryOp : int { kAdd = 0, kSub, kMul, kDiv, kPow, kMax, kMin, kFmod, kPRelu, kFlooredMod };

/// The kF32 | kF16 | i32 | i64 | i8 | u8 dtypes the numeric shaders have variants for.
inline constexpr DTypeSet kNumericVariants = kF32 | kF16 | kInts;
/// Variant of unary.comp, binary.comp, compare.comp and range.comp holding elements of dtype
/// `t` (see element.glsl).
std::string numeric_variant(DType t);
/// "" when the device can run the numeric variant of `t` (16-bit storage for f16, shaderInt64
/// for i64, 8-bit storage and arithmetic for i8/u8); else the reason to decline.
std::string numeric_ok(const KernelContext& ctx, DType t);

/// Converts x into y (same shape) with Cast's rules; both dtypes among f32 f16 bool u8 i8 i32
/// i64 (an i64 source needs shaderInt64).
void run_cast(const KernelContext& ctx, const Tensor& x, const Tensor& y);

/// y = f(x) elementwise over input 0 into output 0 (any size: windows of one binding each).
void run_unary(KernelContext& ctx, int op, double alpha = 0, double beta = 0, double gamma = 0);
/// The same with the four push-constant words after n given raw (integer variants read Clip's
/// bounds from them as two 64-bit values).
void run_unary_words(KernelContext& ctx, int op, const std::array<uint32_t, 4>& words);
std::string unary_supports(const KernelContext& ctx);
/// c = f(a, b) with broadcasting (inputs 0, 1 -> output 0).
void run_binary(KernelContext& ctx, int op);
/// c = f(a, b) with broadcasting, on explicit tensors (c holds the broadcast shape).
void run_binary(const KernelContext& ctx, int op, const Tensor& a, const Tensor& b, const Tensor& c);
std::string binary_supports(const KernelContext& ctx);

// ---- implementation "texel" (CPU-like devices: unary_texel.comp, binary_texel.comp) ----------
// The same launcher functions, run inside texel_kernel(fn), read their float operands as vec4
// texels and write vec4s: the only vectorized load path of lavapipe (docs/VULKAN.md).

/// fn, run so that run_unary/run_binary take the texel shaders.
KernelFn texel_kernel(void (*fn)(KernelContext&));
/// "" when the call suits unary_texel.comp: a CPU-like device with uniform texel buffers of
/// input 0's float dtype, and an output within one binding.
std::string texel_unary_supports(const KernelContext& ctx);
/// As texel_unary_supports for binary_texel.comp: operands of one shape, or one of a single
/// element.
std::string texel_binary_supports(const KernelContext& ctx);

/// How elementwise_chain.comp reads an operand broadcast to `out`, one vec4 of the output at a
/// time: the same texel (`same`: the operand has out's elements), its only element (`single`),
/// texel i % period (`repeat`: the operand is out's trailing axes, a multiple of 4 elements), or
/// element (i / period) % count (`block`: the operand is 1 on out's leading axes, out's on a run
/// of axes after them and 1 on the trailing ones, their block a multiple of 4 elements: a
/// per-channel scale [1, C, 1, 1] or [N, C, 1, 1] of [N, C, H, W], a per-row value [B, S, 1] of
/// [B, S, D]). `none` when it is none of these. count is the operand's elements.
struct TexelRead {
  enum Kind : int { none = -1, same = 0, single = 1, repeat = 2, block = 3 } kind = none;
  int64_t period = 1;
  int64_t count = 1;
};
TexelRead texel_read(const Shape& in, const Shape& out);

/// Registers `Fn` for Op on vulkan (with `Supports`) and, for f32/f16, the same function as
/// implementation "texel" tried first on CPU-like devices (`TexelSupports`).
#define PORTA_VK_ELEMENTWISE(Op, DTypes, Fn, Supports, TexelSupports)                                     \
  namespace {                                                                                            \
  const bool PORTA_CONCAT(porta_vk_plain_##Op##_, __LINE__) = ::porta::register_kernel_at_load(            \
      #Op, ::porta::DeviceType::vulkan, (DTypes), Fn, Supports);                                          \
  const bool PORTA_CONCAT(porta_vk_texel_##Op##_, __LINE__) = ::porta::register_kernel_at_load(            \
      #Op, ::porta::DeviceType::vulkan, (DTypes) & (::porta::kF32 | ::porta::kF16),                      \
      ::porta::vk::texel_kernel(Fn), TexelSupports, ::porta::KernelImpl{"texel", 10});                    \
  }

}  // namespace porta::vk
