// MaxPool, AveragePool (pool.comp), Conv (conv_gemm.comp: implicit GEMM), ConvTranspose
// (conv.comp, direct; also Conv when the GEMM grid exceeds the device), and the global
// pools (reduce.comp over the spatial axes) on vulkan. Geometry comes from the op definitions'
// own helpers (ops/window.hpp, ops/pool.hpp) so kernel and reference agree on pads, auto_pad
// and ceil_mode. Under a driver's cap on loop iterations per invocation (lavapipe), the implicit
// GEMM splits a long K (input channels x taps) over dispatches; the per-element kernels (pools,
// direct Conv and ConvTranspose) and the global pools decline a call whose loops would not fit
// (the *_loops functions below count them).
#include <algorithm>

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

// Upper bounds of the loop iterations one invocation runs, counted as vk_kernel.hpp says (a
// loop costs its iterations + 1, a barrier 1). `axes` is the number of spatial axes (1 to 3).

// pool.comp, one invocation per output element: two loops over the axes (sizes, output
// position), the tap loop (taps + 1) with up to three loops over the axes per tap (window
// position, flat position, column-major index), and for AveragePool the divisor: a loop over
// the axes plus kernel[d] + 1 per axis. Lavapipe (57344 after the margin), 2-D: about 5700
// taps (a 75x75 window).
uint64_t pool_loops(const std::vector<int64_t>& kernel) {
  uint64_t axes = kernel.size() + 1, taps = 1, divisor = axes;
  for (int64_t k : kernel) {
    taps *= static_cast<uint64_t>(k);
    divisor += static_cast<uint64_t>(k) + 1;
  }
  return 2 * axes + taps + 1 + taps * 3 * axes + divisor;
}

// conv.comp (ConvTranspose, and Conv where the GEMM grid does not fit or the test hook turns
// the GEMM off), one invocation per output element: two loops over the axes, the tap loop
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

// reduce.comp for the global pools, one workgroup of 256 per chunk of `chunk` elements of an
// (n, c) plane: the strided loop (chunk/256 + 1) and two workgroup reductions (GlobalMaxPool's
// NaN check is the second), each at most 3 barriers plus a loop over the subgroups (256 + 1
// at worst) or the shared-memory tree (9 + 8 barriers). Lavapipe: a plane up to about 14.5
// million elements in one pass; longer ones are reduced in chunks of that size, then their
// partials (reduce.comp's WRITE_PARTIAL / READ_PARTIAL passes).
uint64_t global_pool_loops(uint64_t chunk) { return (chunk + 255) / 256 + 1 + 2 * (256 + 1 + 3); }

// Elements of a plane one workgroup may reduce under the cap (whole 256s; UINT64_MAX: no cap;
// 0: not even 256).
uint64_t global_pool_chunk(const KernelContext& ctx) {
  uint64_t limit = loop_limit(ctx);
  if (limit == UINT64_MAX) return UINT64_MAX;
  if (limit < global_pool_loops(256)) return 0;
  return (limit - global_pool_loops(0)) * 256;
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

// Conv runs as the implicit GEMM (conv_gemm.comp) unless its grid exceeds the device or a test
// turned it off; ConvTranspose always runs conv.comp.
bool conv_uses_gemm(const DeviceCaps& caps, bool transposed, int64_t columns, int64_t rows, int64_t group) {
  uint64_t gx = static_cast<uint64_t>((columns + 63) / 64), gy = static_cast<uint64_t>((rows + 63) / 64);
  return !transposed && conv_implicit_gemm_enabled() && gx <= caps.max_groups[0] && gy <= caps.max_groups[1] &&
         static_cast<uint64_t>(group) <= caps.max_groups[2];
}

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
  if (conv_uses_gemm(caps, transposed, y.dim(0) * osize, c_out / group, group)) {
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

// The loop cap (see the *_loops functions): "" when the call's loops fit, else the reason.
std::string window_loops_ok(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const std::string& op = ctx.op->name;
  try {
    if (op == "MaxPool" || op == "AveragePool") {
      opdef::WindowGeometry g = opdef::pool_geometry(op, x.shape(), *ctx.attrs);
      return loop_budget_ok(ctx, pool_loops(g.kernel), str("a pooling window of ", shape_str(g.kernel)));
    }
    const Tensor& w = ctx.in(1);
    if (w.rank() != x.rank()) return "";  // shape inference reports it
    Shape k(w.shape().begin() + 2, w.shape().end());
    int64_t group = ctx.attrs->get_int("group", 1);
    if (group <= 0) return "";
    bool transposed = op == "ConvTranspose";
    uint64_t taps = static_cast<uint64_t>(shape_numel(k));
    int64_t cin_g = x.dim(1) / group;
    if (!transposed) {
      opdef::WindowGeometry g = opdef::window_geometry(op, x.shape(), k, *ctx.attrs);
      if (conv_uses_gemm(device_caps(ctx), false, x.dim(0) * shape_numel(g.out), w.dim(0) / group, group)) {
        if (conv_tiles_per_dispatch(ctx) >= 1) return "";  // K is split over dispatches
        return loop_budget_ok(ctx, conv_gemm_loops(1), "one 16-deep K tile of the implicit GEMM");
      }
    }
    return loop_budget_ok(ctx, conv_direct_loops(k.size(), taps, static_cast<uint64_t>(cin_g)),
                          str("an output element of the direct kernel (", taps, " kernel taps x ", cin_g,
                              " input channels per group)"));
  } catch (const Error&) {
    return "";  // invalid attributes: the kernel reports the same error
  }
}

std::string window_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = fp16_ok(ctx, x.dtype()); !why.empty()) return why;
  if (x.rank() < 3 || x.rank() > 2 + static_cast<int>(kMaxSpatial))
    return str("input of rank ", x.rank(), " (1 to ", kMaxSpatial, " spatial axes are native)");
  for (const Tensor& t : ctx.inputs)
    if (t.defined() && t.dtype() != x.dtype()) return "operands of different dtypes";
  if (auto why = window_loops_ok(ctx); !why.empty()) return why;
  return fits_bindings(ctx);
}

template <bool Max>
void global_pool_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  int64_t rows = x.dim(0) * x.dim(1), R = rows ? x.numel() / rows : 0;
  uint64_t chunk = global_pool_chunk(ctx);
  if (chunk == 0) throw BackendError(str("[", ctx.op->name, "] no chunk fits the loop cap (supports should decline)"));
  Launch l;
  l.shader = "reduce";
  l.variant = variant_for(x.dtype());
  l.spec = {Max ? 2 : 1, reduction_strategy(ctx), 0};
  // Passes while a plane is longer than one chunk: each reduces chunks of the current rows to
  // fp32 partials ([rows, parts]: sums, or maxima with NaN kept); the last reduces whole rows
  // (the mean divides by the plane size). One pass when the plane fits.
  Tensor values;
  bool partial_in = false;
  int64_t length = R;
  for (;;) {
    uint64_t parts = static_cast<uint64_t>(length) <= chunk ? 1 : (static_cast<uint64_t>(length) + chunk - 1) / chunk;
    bool partial_out = parts > 1;
    Tensor part = partial_out ? Tensor::empty({static_cast<int64_t>(rows * parts)}, DType::f32, ctx.device) : y;
    const Tensor& in_part = partial_in ? values : x;
    Launch pass = l;
    pass.args = {input(x), output(y), output(part), output(part), input(in_part), input(in_part)};
    pass.push_u(rows);
    pass.push_u(length);
    pass.push_u(1);  // inner
    pass.push_u(parts);
    pass.push_u(partial_out ? chunk : length);
    pass.push_u(R);  // the mean's divisor
    pass.push_u((partial_out ? 1 : 0) | (partial_in ? 2 : 0));
    set_grid(pass, device_caps(ctx), rows * parts);
    launch(ctx, std::move(pass));
    if (!partial_out) return;
    values = part;
    partial_in = true;
    length = static_cast<int64_t>(parts);
  }
}

std::string global_pool_supports(const KernelContext& ctx) {
  if (auto why = reductions_ok(ctx); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (ctx.in(0).rank() < 2) return "input of rank below 2";
  // Planes of any size split into chunks (global_pool_vulkan); only a cap below one element
  // per invocation declines.
  if (global_pool_chunk(ctx) == 0)
    return loop_budget_ok(ctx, global_pool_loops(256), "a reduction of 256 elements per workgroup");
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

PORTA_REGISTER_KERNEL(MaxPool, vulkan, kF32 | kF16 | kI8 | kU8, max_pool_vulkan, max_pool_supports)
PORTA_REGISTER_KERNEL(AveragePool, vulkan, kF32 | kF16, average_pool_vulkan, window_supports)
PORTA_REGISTER_KERNEL(Conv, vulkan, kF32 | kF16, conv2_vulkan, window_supports)
PORTA_REGISTER_KERNEL(ConvTranspose, vulkan, kF32 | kF16, conv_transpose_vulkan, window_supports)
PORTA_REGISTER_KERNEL(GlobalAveragePool, vulkan, kF32 | kF16, global_pool_vulkan<false>, global_pool_supports)
PORTA_REGISTER_KERNEL(GlobalMaxPool, vulkan, kF32 | kF16, global_pool_vulkan<true>, global_pool_supports)

}  // namespace porta::vk
