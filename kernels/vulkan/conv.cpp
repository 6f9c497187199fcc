// Conv and ConvTranspose on vulkan. Conv has two implementations, tried in order: the implicit
// GEMM ("implicit_gemm", conv_gemm.comp: 64x64 output tiles, K = input channels x taps in tiles
// of 16, split over dispatches under a driver's loop cap) and the direct kernel ("direct",
// conv.comp: one invocation per output element), which takes the calls whose GEMM grid exceeds
// the device's workgroup counts. ConvTranspose runs conv.comp. Geometry comes from the op
// definition's helpers (ops/window.hpp), so kernel and reference agree on pads and auto_pad.
#include <algorithm>
#include <array>

#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/window.hpp"
#include "ops/window.hpp"

namespace porta::vk {
namespace {

// Upper bounds of the loop iterations one invocation runs, counted as vk_kernel.hpp says (a
// loop costs its iterations + 1, a barrier 1).

// conv.comp (ConvTranspose, and Conv where the implicit GEMM declines), one invocation per
// output element: two loops over the axes, the tap loop
// (taps + 1) and per tap two loops over the axes and the channel loop (C_in/group + 1).
// Lavapipe, 2-D 3x3: up to about 6300 input channels per group.
uint64_t conv_direct_loops(size_t axes, uint64_t taps, uint64_t channels) {
  uint64_t a = axes + 1;
  return 2 * a + taps + 1 + taps * (2 * a + channels + 1);
}

// conv_gemm.comp in a dispatch over `tiles` K tiles of 16 (K = C_in/group x taps):
//   once:       the loop over the axes 4, accumulator init 5 + 4*5, output 5 + 4*5, the K
//               loop's exit 1                                                             =  55
//   per K tile: its back-edge 1, staging loop 4 + 1 where each of the 4 staged columns runs
//               two loops over the axes (2 * 4), 2 barriers, the kk loop 16 + 1 with, per
//               kk, 2*5 + 5 + 4*5 (the 4-trip loops, usually unrolled, counted anyway)    = 617
// Lavapipe: 92 tiles, K = 1472 per dispatch (e.g. 3x3 taps over 163 channels).
constexpr int64_t kConvTileK = 16;  // TK of conv_gemm.comp
uint64_t conv_gemm_loops(int64_t tiles) { return 55 + 617 * static_cast<uint64_t>(tiles); }

// K tiles one conv_gemm dispatch may run under the cap (INT64_MAX: no cap; 0: not one).
int64_t conv_tiles_per_dispatch(const KernelContext& ctx) {
  uint64_t limit = loop_limit(ctx);
  if (limit == UINT64_MAX) return INT64_MAX;
  if (limit < conv_gemm_loops(1)) return 0;
  return static_cast<int64_t>((limit - conv_gemm_loops(0)) / (conv_gemm_loops(1) - conv_gemm_loops(0)));
}

// One call's geometry; ShapeError when the group does not divide the channels.
struct ConvCall {
  opdef::WindowGeometry g;
  Shape k;
  int64_t group = 1, c_in = 0, c_out = 0;
};

ConvCall conv_call(const KernelContext& ctx, bool transposed) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  ConvCall c;
  c.k = Shape(w.shape().begin() + 2, w.shape().end());
  if (transposed) {
    std::vector<int64_t> opad;
    c.g = opdef::transposed_geometry(ctx.op->name, x.shape(), c.k, *ctx.attrs, &opad);
  } else {
    c.g = opdef::window_geometry(ctx.op->name, x.shape(), c.k, *ctx.attrs);
  }
  c.group = ctx.attrs->get_int("group", 1);
  c.c_in = x.dim(1);
  c.c_out = transposed ? w.dim(1) * c.group : w.dim(0);
  if (c.group <= 0 || c.c_in % c.group || c.c_out % c.group)
    throw ShapeError(str("[", ctx.op->name, "] group ", c.group, " does not divide channels ", c.c_in, " -> ", c.c_out));
  return c;
}

// The push constants conv_gemm.comp and conv.comp share after their first word.
void push_conv(Launch& l, const ConvCall& c, bool bias) {
  l.push_u(c.g.spatial());
  l.push_i(c.c_in);
  l.push_i(c.c_out);
  l.push_i(c.group);
  push3(l, c.g.in);
  push3(l, c.g.out);
  push3(l, c.g.kernel);
  push3(l, c.g.strides);
  push3(l, c.g.pad_begin, 0);
  push3(l, c.g.dilations);
  l.push_u(bias ? 1 : 0);
}

// The implicit GEMM's grid: 64-column tiles of batch x output positions, 64-row tiles of the
// output channels of a group, one layer per group.
std::array<uint64_t, 3> gemm_grid(const KernelContext& ctx, const ConvCall& c) {
  int64_t columns = ctx.in(0).dim(0) * shape_numel(c.g.out);
  return {static_cast<uint64_t>((columns + 63) / 64), static_cast<uint64_t>((c.c_out / c.group + 63) / 64),
          static_cast<uint64_t>(c.group)};
}

void conv_gemm_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConvCall c = conv_call(ctx, false);
  const Shape& k = c.k;
  const int64_t group = c.group, c_in = c.c_in;
  const bool bias = ctx.has_input(2);
  const std::array<uint64_t, 3> grid = gemm_grid(ctx, c);
  const uint64_t gx = grid[0], gy = grid[1];
  Launch l;
  l.shader = "conv_gemm";
  l.variant = variant_for(x.dtype());
  l.args = {input(x), input(w), input(bias ? ctx.in(2) : w), output(y)};
  l.push_u(y.dim(0));
  push_conv(l, c, bias);
  l.groups[0] = static_cast<uint32_t>(gx);
  l.groups[1] = static_cast<uint32_t>(gy);
  l.groups[2] = static_cast<uint32_t>(group);
  int64_t K = c_in / group * shape_numel(k), tiles = (K + kConvTileK - 1) / kConvTileK;
  int64_t per = conv_tiles_per_dispatch(ctx);
  if (per < 1) throw BackendError(str("[", ctx.op->name, "] one K tile exceeds the loop cap (supports should decline)"));
  if (tiles <= per) {  // one dispatch; W stands in for the unused Partial binding
    l.args.push_back(input(w));
    for (int64_t v : {int64_t{0}, K, int64_t{0}}) l.push_u(v);
    launch(ctx, std::move(l));
    return;
  }
  // K slices of `per` tiles each, summed in fp32 through `partial` (indexed like Y).
  Tensor partial = Tensor::empty({y.numel()}, DType::f32, ctx.device);
  l.args.push_back(output(partial));
  for (int64_t k_begin = 0; k_begin < K; k_begin += per * kConvTileK) {
    int64_t k_end = std::min(K, k_begin + per * kConvTileK);
    Launch d = l;
    d.push_u(k_begin);
    d.push_u(k_end);
    d.push_u((k_begin > 0 ? 1u : 0u) | (k_end < K ? 2u : 0u));
    launch(ctx, std::move(d));
  }
}

void conv_direct_vulkan(KernelContext& ctx, bool transposed) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConvCall c = conv_call(ctx, transposed);
  const bool bias = ctx.has_input(2);
  Launch l;
  l.shader = "conv";
  l.variant = variant_for(x.dtype());
  l.spec = {transposed ? 1 : 0};
  l.args = {input(x), input(w), input(bias ? ctx.in(2) : w), output(y)};
  l.push_u(y.numel());
  push_conv(l, c, bias);
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

void conv_direct_kernel(KernelContext& ctx) { conv_direct_vulkan(ctx, false); }
void conv_transpose_vulkan(KernelContext& ctx) { conv_direct_vulkan(ctx, true); }

std::string conv_gemm_supports(const KernelContext& ctx) {
  if (auto why = window_operands_ok(ctx); !why.empty()) return why;
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  if (w.rank() != x.rank() || ctx.attrs->get_int("group", 1) <= 0) return fits_bindings(ctx);  // inference reports it
  try {
    const ConvCall c = conv_call(ctx, false);
    const std::array<uint64_t, 3> grid = gemm_grid(ctx, c);
    const DeviceCaps& caps = device_caps(ctx);
    for (int d = 0; d < 3; ++d)
      if (grid[d] > caps.max_groups[d])
        return str("its grid of ", grid[0], " x ", grid[1], " x ", grid[2], " workgroups exceeds the device's ",
                   caps.max_groups[0], " x ", caps.max_groups[1], " x ", caps.max_groups[2]);
    if (conv_tiles_per_dispatch(ctx) < 1)
      return loop_budget_ok(ctx, conv_gemm_loops(1), "one 16-deep K tile of the implicit GEMM");
  } catch (const Error&) {
    // invalid attributes: the kernel reports the same error
  }
  return fits_bindings(ctx);
}

std::string conv_direct_supports(const KernelContext& ctx) {
  if (auto why = window_operands_ok(ctx); !why.empty()) return why;
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  if (w.rank() != x.rank() || ctx.attrs->get_int("group", 1) <= 0) return fits_bindings(ctx);
  try {
    const ConvCall c = conv_call(ctx, ctx.op->name == "ConvTranspose");
    uint64_t taps = static_cast<uint64_t>(shape_numel(c.k));
    int64_t cin_g = c.c_in / c.group;
    if (auto why = loop_budget_ok(ctx, conv_direct_loops(c.k.size(), taps, static_cast<uint64_t>(cin_g)),
                                  str("an output element of the direct kernel (", taps, " kernel taps x ", cin_g,
                                      " input channels per group)"));
        !why.empty())
      return why;
  } catch (const Error&) {
  }
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Conv, vulkan, kF32 | kF16, conv_gemm_vulkan, conv_gemm_supports,
                      (KernelImpl{"implicit_gemm", 1}))
PORTA_REGISTER_KERNEL(Conv, vulkan, kF32 | kF16, conv_direct_kernel, conv_direct_supports, (KernelImpl{"direct", 0}))
PORTA_REGISTER_KERNEL(ConvTranspose, vulkan, kF32 | kF16, conv_transpose_vulkan, conv_direct_supports)

}  // namespace porta::vk
