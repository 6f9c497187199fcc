// MaxPool, AveragePool (pool.comp), Conv (conv_gemm.comp: implicit GEMM), ConvTranspose
// (conv.comp, direct; also Conv when the GEMM grid exceeds the device), and the global
// pools (reduce.comp over the spatial axes) on vulkan. Geometry comes from the op definitions'
// own helpers (ops/window.hpp, ops/pool.hpp) so kernel and reference agree on pads, auto_pad
// and ceil_mode.
#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/pool.hpp"
#include "ops/window.hpp"

namespace porta::vk {
namespace {

constexpr size_t kMaxSpatial = 3;

void push3(Launch& l, const std::vector<int64_t>& v, int64_t fill = 1) {
  for (size_t d = 0; d < kMaxSpatial; ++d) l.push_i(d < v.size() ? v[d] : fill);
}

void pool_vulkan(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::WindowGeometry g = opdef::pool_geometry(ctx.op->name, x.shape(), *ctx.attrs);
  bool include_pad = !max && ctx.attrs->get_int("count_include_pad", 0) != 0;
  bool indices = max && ctx.outputs.size() > 1 && ctx.out(1).defined();
  std::vector<int64_t> lo, hi;
  for (size_t d = 0; d < g.spatial(); ++d) {
    lo.push_back(include_pad ? -g.pad_begin[d] : 0);
    hi.push_back(include_pad ? g.in[d] + g.pad_end[d] : g.in[d]);
  }
  Launch l;
  l.shader = "pool";
  l.variant = numeric_variant(x.dtype());  // f32, f16, and i8/u8 for MaxPool
  l.spec = {max ? 1 : 0};
  l.args = {input(x), output(y), output(indices ? ctx.out(1) : y)};
  l.push_u(y.numel());
  l.push_u(g.spatial());
  push3(l, g.in);
  push3(l, g.out);
  push3(l, g.kernel);
  push3(l, g.strides);
  push3(l, g.pad_begin, 0);
  push3(l, g.dilations);
  push3(l, lo, 0);
  push3(l, hi, 0);
  l.push_u(indices ? 1 : 0);
  l.push_u(max && ctx.attrs->get_int("storage_order", 0) != 0 ? 1 : 0);
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

void max_pool_vulkan(KernelContext& ctx) { pool_vulkan(ctx, true); }
void average_pool_vulkan(KernelContext& ctx) { pool_vulkan(ctx, false); }

void conv_vulkan(KernelContext& ctx, bool transposed) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  Shape k(w.shape().begin() + 2, w.shape().end());
  opdef::WindowGeometry g;
  if (transposed) {
    std::vector<int64_t> opad;
    g = opdef::transposed_geometry(ctx.op->name, x.shape(), k, *ctx.attrs, &opad);
  } else {
    g = opdef::window_geometry(ctx.op->name, x.shape(), k, *ctx.attrs);
  }
  int64_t group = ctx.attrs->get_int("group", 1);
  int64_t c_in = x.dim(1), c_out = y.dim(1);
  if (group <= 0 || c_in % group || c_out % group)
    throw ShapeError(str("[", ctx.op->name, "] group ", group, " does not divide channels ", c_in, " -> ", c_out));
  bool bias = ctx.has_input(2);
  const DeviceCaps& caps = device_caps(ctx);
  int64_t osize = shape_numel(g.out);
  uint64_t gx = static_cast<uint64_t>((y.dim(0) * osize + 63) / 64), gy = static_cast<uint64_t>((c_out / group + 63) / 64);
  if (!transposed && conv_implicit_gemm_enabled() && gx <= caps.max_groups[0] && gy <= caps.max_groups[1] &&
      static_cast<uint64_t>(group) <= caps.max_groups[2]) {
    // Implicit GEMM (tiled); the direct kernel below serves ConvTranspose and huge grids.
    Launch l;
    l.shader = "conv_gemm";
    l.variant = variant_for(x.dtype());
    l.args = {input(x), input(w), input(bias ? ctx.in(2) : w), output(y)};
    l.push_u(y.dim(0));
    l.push_u(g.spatial());
    l.push_i(c_in);
    l.push_i(c_out);
    l.push_i(group);
    push3(l, g.in);
    push3(l, g.out);
    push3(l, g.kernel);
    push3(l, g.strides);
    push3(l, g.pad_begin, 0);
    push3(l, g.dilations);
    l.push_u(bias ? 1 : 0);
    l.groups[0] = static_cast<uint32_t>(gx);
    l.groups[1] = static_cast<uint32_t>(gy);
    l.groups[2] = static_cast<uint32_t>(group);
    launch(ctx, std::move(l));
    return;
  }
  Launch l;
  l.shader = "conv";
  l.variant = variant_for(x.dtype());
  l.spec = {transposed ? 1 : 0};
  l.args = {input(x), input(w), input(bias ? ctx.in(2) : w), output(y)};
  l.push_u(y.numel());
  l.push_u(g.spatial());
  l.push_i(c_in);
  l.push_i(c_out);
  l.push_i(group);
  push3(l, g.in);
  push3(l, g.out);
  push3(l, g.kernel);
  push3(l, g.strides);
  push3(l, g.pad_begin, 0);
  push3(l, g.dilations);
  l.push_u(bias ? 1 : 0);
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

void conv2_vulkan(KernelContext& ctx) { conv_vulkan(ctx, false); }
void conv_transpose_vulkan(KernelContext& ctx) { conv_vulkan(ctx, true); }

std::string window_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = fp16_ok(ctx, x.dtype()); !why.empty()) return why;
  if (x.rank() < 3 || x.rank() > 2 + static_cast<int>(kMaxSpatial))
    return str("input of rank ", x.rank(), " (1 to ", kMaxSpatial, " spatial axes are native)");
  for (const Tensor& t : ctx.inputs)
    if (t.defined() && t.dtype() != x.dtype()) return "operands of different dtypes";
  return fits_bindings(ctx);
}

template <bool Max>
void global_pool_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  int64_t rows = x.dim(0) * x.dim(1), R = rows ? x.numel() / rows : 0;
  Launch l;
  l.shader = "reduce";
  l.variant = variant_for(x.dtype());
  l.spec = {Max ? 2 : 1, reduction_strategy(ctx), 0};
  l.args = {input(x), output(y), output(y)};
  l.push_u(rows);
  l.push_u(R);
  l.push_u(1);
  set_grid(l, device_caps(ctx), rows);
  launch(ctx, std::move(l));
}

std::string global_pool_supports(const KernelContext& ctx) {
  if (auto why = reductions_ok(ctx); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (ctx.in(0).rank() < 2) return "input of rank below 2";
  return fits_bindings(ctx);
}

}  // namespace

// MaxPool also runs on 8-bit images (pool.comp's i8/u8 variants, where the device has 8-bit
// storage and arithmetic).
std::string max_pool_supports(const KernelContext& ctx) {
  DType t = ctx.in(0).dtype();
  if (is_integer(t))
    if (auto why = numeric_ok(ctx, t); !why.empty()) return why;
  return window_supports(ctx);
}

PORTA_REGISTER_KERNEL_IF(MaxPool, vulkan, kF32 | kF16 | kI8 | kU8, max_pool_vulkan, max_pool_supports)
PORTA_REGISTER_KERNEL_IF(AveragePool, vulkan, kF32 | kF16, average_pool_vulkan, window_supports)
PORTA_REGISTER_KERNEL_IF(Conv, vulkan, kF32 | kF16, conv2_vulkan, window_supports)
PORTA_REGISTER_KERNEL_IF(ConvTranspose, vulkan, kF32 | kF16, conv_transpose_vulkan, window_supports)
PORTA_REGISTER_KERNEL_IF(GlobalAveragePool, vulkan, kF32 | kF16, global_pool_vulkan<false>, global_pool_supports)
PORTA_REGISTER_KERNEL_IF(GlobalMaxPool, vulkan, kF32 | kF16, global_pool_vulkan<true>, global_pool_supports)

}  // namespace porta::vk
