// Elementwise unary ops on vulkan: every op here is unary.comp specialised with its OP code
// (see elementwise.hpp); attributes travel as push constants.
#include <limits>

#include "kernels/vulkan/elementwise.hpp"

namespace porta::vk {
namespace {

template <int Op>
void unary_vulkan(KernelContext& ctx) { run_unary(ctx, Op); }

void leaky_relu_vulkan(KernelContext& ctx) { run_unary(ctx, kLeakyRelu, ctx.attrs->get_float("alpha")); }
void elu_vulkan(KernelContext& ctx) { run_unary(ctx, kElu, ctx.attrs->get_float("alpha")); }
void celu_vulkan(KernelContext& ctx) { run_unary(ctx, kCelu, ctx.attrs->get_float("alpha")); }
void hard_sigmoid_vulkan(KernelContext& ctx) {
  run_unary(ctx, kHardSigmoid, ctx.attrs->get_float("alpha"), ctx.attrs->get_float("beta"));
}
void selu_vulkan(KernelContext& ctx) {
  run_unary(ctx, kSelu, ctx.attrs->get_float("alpha"), 0, ctx.attrs->get_float("gamma"));
}

// Reads an optional scalar bound (min or max) of Clip; the host needs its value to pass it as a
// push constant: the session's host copy where it has one, else read back (which waits for
// the device).
double clip_bound(const KernelContext& ctx, size_t i, double absent) {
  if (!ctx.has_input(i)) return absent;
  const Tensor& t = ctx.in(i);
  if (t.numel() != 1)
    throw ShapeError(str("[Clip] ", i == 1 ? "min" : "max", " should be a scalar, got shape ", shape_str(t.shape())));
  return ctx.on_host(i).to_doubles().at(0);
}

// An integer bound of Clip as an i64 (the dtype's limit when absent), read on the host.
int64_t clip_int_bound(const KernelContext& ctx, size_t i, bool low) {
  DType t = ctx.in(0).dtype();
  if (!ctx.has_input(i)) {
    switch (t) {
      case DType::i64: return low ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
      case DType::i32: return low ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max();
      case DType::i8: return low ? -128 : 127;
      default: return low ? 0 : 255;
    }
  }
  const Tensor& b = ctx.in(i);
  if (b.numel() != 1)
    throw ShapeError(str("[Clip] ", i == 1 ? "min" : "max", " should be a scalar, got shape ", shape_str(b.shape())));
  const Tensor h = ctx.on_host(i);
  int64_t v = 0;
  switch (t) {
    case DType::i64: h.copy_to_host(&v, 8); return v;
    case DType::i32: { int32_t w = 0; h.copy_to_host(&w, 4); return w; }
    case DType::i8: { int8_t w = 0; h.copy_to_host(&w, 1); return w; }
    default: { uint8_t w = 0; h.copy_to_host(&w, 1); return w; }
  }
}

void clip_vulkan(KernelContext& ctx) {
  if (is_integer(ctx.in(0).dtype())) {
    auto lo = static_cast<uint64_t>(clip_int_bound(ctx, 1, true));
    auto hi = static_cast<uint64_t>(clip_int_bound(ctx, 2, false));
    auto word = [](uint64_t v, int k) { return static_cast<uint32_t>(v >> (32 * k)); };
    run_unary_words(ctx, kClip, {word(lo, 0), word(lo, 1), word(hi, 0), word(hi, 1)});
    return;
  }
  // In a session the bounds come from its host copies (OpSchema::host_read_inputs): constants
  // are not read back from the device (ReLU6 in every block of a mobilenet).
  double lo = clip_bound(ctx, 1, -std::numeric_limits<double>::infinity());
  double hi = clip_bound(ctx, 2, std::numeric_limits<double>::infinity());
  run_unary(ctx, kClip, lo, hi);
}

}  // namespace

PORTA_VK_ELEMENTWISE(Abs, kNumericVariants, unary_vulkan<kAbs>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Neg, kF32 | kF16 | kI64 | kI32 | kI8, unary_vulkan<kNeg>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Exp, kF32 | kF16, unary_vulkan<kExp>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Log, kF32 | kF16, unary_vulkan<kLog>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Sqrt, kF32 | kF16, unary_vulkan<kSqrt>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Reciprocal, kF32 | kF16, unary_vulkan<kReciprocal>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Tanh, kF32 | kF16, unary_vulkan<kTanh>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Sigmoid, kF32 | kF16, unary_vulkan<kSigmoid>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Erf, kF32 | kF16, unary_vulkan<kErf>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Sin, kF32 | kF16, unary_vulkan<kSin>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Cos, kF32 | kF16, unary_vulkan<kCos>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Floor, kF32 | kF16, unary_vulkan<kFloor>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Ceil, kF32 | kF16, unary_vulkan<kCeil>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(LeakyRelu, kF32 | kF16, leaky_relu_vulkan, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Elu, kF32 | kF16, elu_vulkan, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Clip, kNumericVariants, clip_vulkan, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Sign, kNumericVariants, unary_vulkan<kSign>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Round, kF32 | kF16, unary_vulkan<kRound>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Tan, kF32 | kF16, unary_vulkan<kTan>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(HardSwish, kF32 | kF16, unary_vulkan<kHardSwish>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(HardSigmoid, kF32 | kF16, hard_sigmoid_vulkan, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Softplus, kF32 | kF16, unary_vulkan<kSoftplus>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Softsign, kF32 | kF16, unary_vulkan<kSoftsign>, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Selu, kF32 | kF16, selu_vulkan, unary_supports, texel_unary_supports)
PORTA_VK_ELEMENTWISE(Celu, kF32 | kF16, celu_vulkan, unary_supports, texel_unary_supports)

}  // namespace porta::vk
