// RotaryEmbedding (ai.porta) on vulkan: rotary_embedding.comp, one invocation per rotated pair
// (f32; interleaved or halves is a specialization constant).
#include <algorithm>

#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

// Whether the shader reads X `t` where it lies: 4-D, D dense, no negative stride, the binding's
// start on the device's storage alignment and its span within one binding.
bool x_view_ok(const KernelContext& ctx, const Tensor& t) {
  const Shape& shape = t.shape();
  if (shape.size() != 4 || (shape[3] > 1 && t.strides()[3] != 1)) return false;
  for (int64_t st : t.strides())
    if (st < 0) return false;
  const DeviceCaps& caps = device_caps(ctx);
  const uint64_t start = static_cast<uint64_t>(t.offset()) * dtype_size(t.dtype());
  return start % std::max<uint64_t>(caps.storage_alignment, 4) == 0 &&
         static_cast<uint64_t>(view_span(t)) * dtype_size(t.dtype()) <= binding_limit(ctx);
}

void rotary_embedding_vulkan(KernelContext& ctx) {
  // X is read where it lies when x_view_ok (a session's head split); other layouts, and the
  // tables, are copied first.
  contiguous_inputs_unless(ctx, [&](size_t i, const Tensor& t) { return i == 0 && x_view_ok(ctx, t); });
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t pairs = y.numel() / 2;
  if (pairs == 0) return;
  int64_t interleaved = ctx.attrs->get_int("interleaved");
  if (interleaved != 0 && interleaved != 1)
    throw InvalidModel(str("[RotaryEmbedding] interleaved should be 0 or 1, got ", interleaved));
  Launch l;
  l.shader = "rotary_embedding";
  l.spec = {static_cast<int32_t>(interleaved)};
  Arg src = input(x);
  src.bytes = static_cast<size_t>(view_span(x)) * dtype_size(x.dtype());
  l.args = {src, input(ctx.in(1)), input(ctx.in(2)), output(y)};
  l.push_u(pairs);
  l.push_u(x.shape()[2]);
  l.push_u(x.shape()[3] / 2);
  l.push_u(x.shape()[1]);
  for (size_t i = 0; i < 3; ++i) l.push_u(x.shape()[i] > 1 ? x.strides()[i] : 0);
  set_grid(l, device_caps(ctx), (pairs + 255) / 256);
  launch(ctx, std::move(l));
}

}  // namespace

const bool rotary_registered = [] {
  KernelDef k;
  k.op = "RotaryEmbedding";
  k.backend = DeviceType::vulkan;
  k.dtypes = kF32;
  k.fn = rotary_embedding_vulkan;
  k.supports = fits_bindings;
  k.strided_inputs = true;
  k.reads_view = [](const KernelContext& ctx, size_t i) { return i == 0 && x_view_ok(ctx, ctx.in(0)); };
  return register_kernel_at_load(std::move(k));
}();

}  // namespace porta::vk
