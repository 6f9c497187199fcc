// Elementwise binary ops on vulkan: binary.comp specialised per op (see elementwise.hpp).
// Pow converts an exponent of another dtype. Max, Min, Sum and Mean are variadic in ONNX: one
// input is a copy, more than two fold pairwise through broadcast intermediates; Mean then
// multiplies by 1/n.
#include "kernels/vulkan/elementwise.hpp"

namespace porta::vk {
namespace {

template <int Op>
void binary_vulkan(KernelContext& ctx) { run_binary(ctx, Op); }

Shape broadcast(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r, 1);
  for (size_t j = 0; j < r; ++j) {
    int64_t da = j < a.size() ? a[a.size() - 1 - j] : 1;
    int64_t db = j < b.size() ? b[b.size() - 1 - j] : 1;
    out[r - 1 - j] = da == 1 ? db : da;
  }
  return out;
}

template <int Op, bool Mean = false>
void variadic_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  std::vector<Tensor> ins;
  for (const Tensor& t : ctx.inputs)
    if (t.defined()) ins.push_back(t);
  if (ins.size() == 1) {
    if (y.numel()) y.copy_(ins[0].expand(y.shape()).contiguous());
    return;
  }
  Tensor acc = ins[0];
  for (size_t i = 1; i < ins.size(); ++i) {
    bool last = i + 1 == ins.size() && !Mean;
    Tensor next = last ? y : Tensor::empty(broadcast(acc.shape(), ins[i].shape()), y.dtype(), ctx.device);
    if (next.numel()) run_binary(ctx, Op, acc, ins[i], next);
    acc = next;
  }
  if constexpr (Mean) {
    double inv = 1.0 / static_cast<double>(ins.size());
    Tensor scale = Tensor::scalar(inv, y.dtype()).to(ctx.device);
    if (y.numel()) run_binary(ctx, kMul, acc, scale, y);
  }
}

void mod_vulkan(KernelContext& ctx) { run_binary(ctx, ctx.attrs->get_int("fmod") ? kFmod : kFlooredMod); }

// Pow's exponent may have another dtype than the base (ONNX's T1). A float base: both
// operands are converted to f32 on the device, pow runs in f32 and the result is converted back
// (the CPU computes such mixed calls in double; results agree to f32 rounding). An integer base
// with a narrower integer exponent: the exponent is widened to the base's dtype. Integer powers
// are exact with wrap-around (binary.comp).
void pow_vulkan(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (a.dtype() == b.dtype()) return run_binary(ctx, kPow);
  if (y.numel() == 0) return;
  DType compute = is_integer(a.dtype()) ? a.dtype() : DType::f32;
  auto as_compute = [&](const Tensor& t) {
    if (t.dtype() == compute) return t;
    Tensor f = Tensor::empty(t.shape(), compute, ctx.device);
    run_cast(ctx, t, f);
    return f;
  };
  Tensor out = y.dtype() == compute ? y : Tensor::empty(y.shape(), compute, ctx.device);
  run_binary(ctx, kPow, as_compute(a), as_compute(b), out);
  if (out.dtype() != y.dtype()) run_cast(ctx, out, y);
}

std::string pow_supports(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  const DeviceCaps& caps = device_caps(ctx);
  if (a.dtype() == b.dtype()) return binary_supports(ctx);
  if (auto why = numeric_ok(ctx, a.dtype()); !why.empty()) return why;
  bool integer_base = is_integer(a.dtype());
  if (integer_base && !(is_integer(b.dtype()) && dtype_size(b.dtype()) < dtype_size(a.dtype())))
    return str("exponent of dtype ", dtype_name(b.dtype()), " with a ", dtype_name(a.dtype()),
               " base (native: a narrower integer exponent)");
  if (b.dtype() != DType::f32 && b.dtype() != DType::f16 && b.dtype() != DType::i32 &&
      !(b.dtype() == DType::i64 && caps.int64_arithmetic) && b.dtype() != DType::i8 && b.dtype() != DType::u8)
    return str("exponent of dtype ", dtype_name(b.dtype()), " with a ", dtype_name(a.dtype()), " base");
  if (!caps.fp16_storage || !caps.int8_storage)
    return "converting the exponent needs 16-bit and 8-bit storage (cast.comp)";
  // The converted operands and result each go through one binding.
  size_t elem = integer_base ? dtype_size(a.dtype()) : 4;
  Shape out = broadcast(a.shape(), b.shape());
  for (int64_t n : {a.numel(), b.numel(), shape_numel(out)})
    if (static_cast<uint64_t>(n) * elem > caps.max_storage_range)
      return str("an operand of ", n, " elements is larger than maxStorageBufferRange (", caps.max_storage_range, ")");
  if (broadcast_map(out, {a.shape(), b.shape()}).shape.size() > static_cast<size_t>(kMaxRank))
    return str("broadcast needs more than ", kMaxRank, " axes after merging");
  return "";
}

std::string variadic_supports(const KernelContext& ctx) {
  KernelContext pair = ctx;
  pair.inputs.clear();
  for (const Tensor& t : ctx.inputs) {
    if (!t.defined()) continue;
    if (t.dtype() != ctx.in(0).dtype()) return "inputs have different dtypes";
    pair.inputs = {ctx.in(0), t};
    if (auto why = binary_supports(pair); !why.empty()) return why;
  }
  return "";
}

}  // namespace

PORTA_VK_ELEMENTWISE(Sub, kNumericVariants, binary_vulkan<kSub>, binary_supports, texel_binary_supports)
PORTA_VK_ELEMENTWISE(Mul, kNumericVariants, binary_vulkan<kMul>, binary_supports, texel_binary_supports)
PORTA_VK_ELEMENTWISE(Div, kNumericVariants, binary_vulkan<kDiv>, binary_supports, texel_binary_supports)
PORTA_REGISTER_KERNEL(Pow, vulkan, kF32 | kF16 | kI32 | kI64, pow_vulkan, pow_supports)
PORTA_REGISTER_KERNEL(Max, vulkan, kNumericVariants, variadic_vulkan<kMax>, variadic_supports)
PORTA_REGISTER_KERNEL(Min, vulkan, kNumericVariants, variadic_vulkan<kMin>, variadic_supports)
PORTA_REGISTER_KERNEL(Sum, vulkan, kF32 | kF16, variadic_vulkan<kAdd>, variadic_supports)
PORTA_REGISTER_KERNEL(Mean, vulkan, kF32 | kF16, (variadic_vulkan<kAdd, true>), variadic_supports)
PORTA_REGISTER_KERNEL(Mod, vulkan, kNumericVariants, mod_vulkan, binary_supports)
PORTA_REGISTER_KERNEL(PRelu, vulkan, kF32 | kF16, binary_vulkan<kPRelu>, binary_supports)

}  // namespace porta::vk
