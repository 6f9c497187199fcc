// Elementwise binary ops on vulkan: binary.comp specialised per op (see elementwise.hpp).
// Max and Min are variadic in ONNX: one input is a copy, more than two fold pairwise through
// broadcast intermediates.
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

template <int Op>
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
    bool last = i + 1 == ins.size();
    Tensor next = last ? y : Tensor::empty(broadcast(acc.shape(), ins[i].shape()), y.dtype(), ctx.device);
    if (next.numel()) run_binary(ctx, Op, acc, ins[i], next);
    acc = next;
  }
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

PORTA_REGISTER_KERNEL_IF(Sub, vulkan, kNumericVariants, binary_vulkan<kSub>, binary_supports)
PORTA_REGISTER_KERNEL_IF(Mul, vulkan, kNumericVariants, binary_vulkan<kMul>, binary_supports)
PORTA_REGISTER_KERNEL_IF(Div, vulkan, kNumericVariants, binary_vulkan<kDiv>, binary_supports)
PORTA_REGISTER_KERNEL_IF(Pow, vulkan, kF32 | kF16, binary_vulkan<kPow>, binary_supports)
PORTA_REGISTER_KERNEL_IF(Max, vulkan, kNumericVariants, variadic_vulkan<kMax>, variadic_supports)
PORTA_REGISTER_KERNEL_IF(Min, vulkan, kNumericVariants, variadic_vulkan<kMin>, variadic_supports)

}  // namespace porta::vk
