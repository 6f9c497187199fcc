// Comparisons (Equal, Less, Greater), logic (And, Or, Not) and Where on vulkan, with NumPy
// broadcasting: compare.comp (f32, f16, i32, i64, i8, u8 or bool operands) and where.comp (any
// dtype). Bool tensors are one byte per element, so these need 8-bit storage; without it they
// decline.
#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

// Pushes n, rank, shape and each operand's strides (6 words each) for a broadcast kernel.
void push_broadcast(Launch& l, const Tensor& out, const std::vector<Shape>& operands) {
  BroadcastMap m = broadcast_map(out.shape(), operands);
  if (m.shape.size() > static_cast<size_t>(kMaxRank))
    throw Unsupported(str("[", l.shader, "] broadcast needs more than ", kMaxRank, " axes"));
  l.push_u(out.numel());
  l.push_u(m.shape.size());
  for (size_t k = 0; k <= operands.size(); ++k) {
    const std::vector<int64_t>& v = k == 0 ? m.shape : m.strides[k - 1];
    for (int d = 0; d < kMaxRank; ++d) l.push_u(d < static_cast<int>(v.size()) ? v[d] : 0);
  }
}

std::string compare_variant(DType t) {
  if (t == DType::boolean) return "b8";
  return numeric_variant(t);
}

template <int Op>
void compare_vulkan(KernelContext& ctx) {
  Tensor& c = ctx.out(0);
  if (c.numel() == 0) return;
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.has_input(1) ? ctx.in(1) : a;  // Not has one operand
  Launch l;
  l.shader = "compare";
  l.variant = compare_variant(a.dtype());
  l.spec = {Op};
  l.args = {input(a), input(b), output(c)};
  push_broadcast(l, c, {a.shape(), b.shape()});
  set_grid(l, device_caps(ctx), (c.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

std::string compare_supports(const KernelContext& ctx) {
  if (!device_caps(ctx).int8_storage) return "the device has no 8-bit storage for bool";
  DType t = ctx.in(0).dtype();
  if (t != DType::boolean)
    if (auto why = numeric_ok(ctx, t); !why.empty()) return why;
  for (const Tensor& x : ctx.inputs)
    if (x.defined() && x.rank() > kMaxRank) return rank_ok(x.rank());
  return fits_bindings(ctx);
}

void where_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  Launch l;
  l.shader = "where";
  size_t size = dtype_size(y.dtype());
  l.variant = size == 8 ? "b64" : size == 2 ? "b16" : size == 1 ? "b8" : "b32";
  l.args = {input(ctx.in(0)), input(ctx.in(1)), input(ctx.in(2)), output(y)};
  push_broadcast(l, y, {ctx.in(0).shape(), ctx.in(1).shape(), ctx.in(2).shape()});
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

std::string where_supports(const KernelContext& ctx) {
  if (!device_caps(ctx).int8_storage) return "the device has no 8-bit storage for bool";
  if (auto why = movable(ctx, ctx.in(1).dtype()); !why.empty()) return why;
  for (const Tensor& x : ctx.inputs)
    if (x.defined() && x.rank() > kMaxRank) return rank_ok(x.rank());
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Equal, vulkan, kNumericVariants | kBool, compare_vulkan<0>, compare_supports)
PORTA_REGISTER_KERNEL(Less, vulkan, kNumericVariants, compare_vulkan<1>, compare_supports)
PORTA_REGISTER_KERNEL(Greater, vulkan, kNumericVariants, compare_vulkan<2>, compare_supports)
PORTA_REGISTER_KERNEL(And, vulkan, kBool, compare_vulkan<5>, compare_supports)
PORTA_REGISTER_KERNEL(Or, vulkan, kBool, compare_vulkan<6>, compare_supports)
PORTA_REGISTER_KERNEL(Not, vulkan, kBool, compare_vulkan<8>, compare_supports)
PORTA_REGISTER_KERNEL(Where, vulkan, kAllTypes, where_vulkan, where_supports)

}  // namespace porta::vk
