// MaxPool, AveragePool (pool.comp, implementation "taps"; on CPU-like devices 2-D pools run
// pool_window.comp first, implementation "window") and the global pools (reduce.comp over the spatial axes) on
// vulkan. Geometry comes from the op definitions' own helpers (ops/pool.hpp) so kernel and
// reference agree on pads, auto_pad and ceil_mode. Under a driver's cap on loop iterations per
// invocation (lavapipe), pool.comp declines a call whose window would not fit, and the global
// pools reduce long planes in chunks (the *_loops functions below count the loops).
#include <algorithm>

#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/window.hpp"
#include "ops/pool.hpp"
#include "ops/window.hpp"

namespace porta::vk {
namespace {

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

// ---- "window": 2-D pools on CPU-like devices (pool_window.comp) -------------------------------

constexpr int64_t kRowWindow = 8, kRowStep = 4;

void pool_window_vulkan(KernelContext& ctx, bool max) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  // An eager call may be resolved before its outputs exist, so `supports` cannot always see
  // that MaxPool's Indices are asked for: pool.comp writes them.
  if (ctx.outputs.size() > 1 && ctx.outputs[1].defined()) return pool_vulkan(ctx, max);
  opdef::WindowGeometry g = opdef::pool_geometry(ctx.op->name, x.shape(), *ctx.attrs);
  const bool include_pad = !max && ctx.attrs->get_int("count_include_pad", 0) != 0;
  const int64_t quads = (g.out[1] + 3) / 4;
  const uint64_t total = static_cast<uint64_t>(x.dim(0) * x.dim(1) * g.out[0] * quads);
  Launch l;
  l.shader = "pool_window";
  l.variant = variant_for(x.dtype());
  // The taps unrolled (pool_window.comp's ROW) for the windows of CNNs: up to 8 high and wide,
  // strides and dilations up to 4 along the row.
  const bool row = g.kernel[0] <= kRowWindow && g.kernel[1] <= kRowWindow && g.strides[1] <= kRowStep &&
                   g.dilations[1] <= kRowStep;
  const bool vec_out = g.out[1] % 4 == 0 && y.offset() % 4 == 0;
  l.spec = {max ? 1 : 0,
            total < kDiv21Bound ? 1 : 0,
            row ? 1 : 0,
            row ? static_cast<int32_t>(g.kernel[1]) : 1,
            row ? static_cast<int32_t>(g.strides[1]) : 1,
            row ? static_cast<int32_t>(g.dilations[1]) : 1,
            row ? static_cast<int32_t>(g.kernel[0]) : 1,
            vec_out ? 1 : 0};
  l.local_size = 64;
  l.args = {scalar_texels(x), output(y), output(y)};
  l.push_u(total);
  l.push_u(quads);
  for (int64_t v : {g.in[0], g.in[1], g.out[0], g.out[1], g.kernel[0], g.kernel[1], g.strides[0], g.strides[1],
                    g.pad_begin[0], g.pad_begin[1], g.dilations[0], g.dilations[1]})
    l.push_u(v);
  for (size_t d = 0; d < 2; ++d) {
    l.push_i(include_pad ? -g.pad_begin[d] : 0);
    l.push_i(include_pad ? g.in[d] + g.pad_end[d] : g.in[d]);
  }
  set_grid(l, device_caps(ctx), (total + 63) / 64);
  launch(ctx, std::move(l));
}

std::string pool_window_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "pool.comp"); !why.empty()) return why;
  if (x.rank() != 4) return "not a 2-D pool";
  if (ctx.outputs.size() > 1 && ctx.outputs[1].defined()) return "MaxPool's Indices output is asked for";
  if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
  try {
    opdef::WindowGeometry g = opdef::pool_geometry(ctx.op->name, x.shape(), *ctx.attrs);
    const uint64_t kh = static_cast<uint64_t>(g.kernel[0]), kw = static_cast<uint64_t>(g.kernel[1]);
    // The KH loop, per row the KW loop and per tap the 4 outputs', the divisor's loops, the store.
    if (auto why = loop_budget_ok(ctx, kh + 1 + kh * (kw + 1) + kh * kw * 5 + (kh + 1) + 5 + 4 * (kw + 1) + 5,
                                  str("a pooling window of ", shape_str(g.kernel)));
        !why.empty())
      return why;
    if (x.dim(0) * x.dim(1) * g.out[0] * ((g.out[1] + 3) / 4) >= (int64_t{1} << 31)) return "more than 2^31 invocations";
  } catch (const Error&) {
    return fits_bindings(ctx);  // invalid attributes: the kernel reports the same error
  }
  return fits_bindings(ctx);
}

void max_pool_vulkan(KernelContext& ctx) { pool_vulkan(ctx, true); }
void average_pool_vulkan(KernelContext& ctx) { pool_vulkan(ctx, false); }

std::string pool_supports(const KernelContext& ctx) {
  if (auto why = window_operands_ok(ctx); !why.empty()) return why;
  try {
    opdef::WindowGeometry g = opdef::pool_geometry(ctx.op->name, ctx.in(0).shape(), *ctx.attrs);
    if (auto why = loop_budget_ok(ctx, pool_loops(g.kernel), str("a pooling window of ", shape_str(g.kernel)));
        !why.empty())
      return why;
  } catch (const Error&) {
    // invalid attributes: the kernel reports the same error
  }
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

// ---- implementation "rows" of the global pools (CPU-like devices: global_pool_rows.comp) -----

template <bool Max>
void global_pool_rows_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  int64_t rows = x.dim(0) * x.dim(1), length = rows ? x.numel() / rows : 0;
  Launch l;
  l.shader = "global_pool_rows";
  l.variant = variant_for(x.dtype());
  l.spec = {Max ? 1 : 0};
  l.local_size = 64;
  l.args = {scalar_texels(x), output(y)};
  l.push_u(rows);
  l.push_u(length);
  set_grid(l, device_caps(ctx), (rows + 63) / 64);
  launch(ctx, std::move(l));
}

std::string global_pool_rows_supports(const KernelContext& ctx) {
  if (auto why = cpu_like_ok(ctx, "a workgroup per plane"); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (auto why = scalar_texels_ok(ctx, ctx.in(0)); !why.empty()) return why;
  if (ctx.in(0).rank() < 2) return "input of rank below 2";
  int64_t rows = ctx.in(0).dim(0) * ctx.in(0).dim(1), length = rows ? ctx.in(0).numel() / rows : 0;
  if (auto why = loop_budget_ok(ctx, static_cast<uint64_t>(length) + 1, str("a plane of ", length, " elements"));
      !why.empty())
    return why;
  return fits_bindings(ctx);
}

}  // namespace

// MaxPool also runs on 8-bit images (pool.comp's i8/u8 variants, where the device has 8-bit
// storage and arithmetic).
std::string max_pool_supports(const KernelContext& ctx) {
  DType t = ctx.in(0).dtype();
  if (is_integer(t))
    if (auto why = numeric_ok(ctx, t); !why.empty()) return why;
  return pool_supports(ctx);
}

PORTA_REGISTER_KERNEL(MaxPool, vulkan, kF32 | kF16, [](KernelContext& ctx) { pool_window_vulkan(ctx, true); },
                      pool_window_supports, (KernelImpl{"window", 1}))
PORTA_REGISTER_KERNEL(MaxPool, vulkan, kF32 | kF16 | kI8 | kU8, max_pool_vulkan, max_pool_supports,
                      (KernelImpl{"taps", 0}))
PORTA_REGISTER_KERNEL(AveragePool, vulkan, kF32 | kF16, [](KernelContext& ctx) { pool_window_vulkan(ctx, false); },
                      pool_window_supports, (KernelImpl{"window", 1}))
PORTA_REGISTER_KERNEL(AveragePool, vulkan, kF32 | kF16, average_pool_vulkan, pool_supports, (KernelImpl{"taps", 0}))
PORTA_REGISTER_KERNEL(GlobalAveragePool, vulkan, kF32 | kF16, global_pool_rows_vulkan<false>, global_pool_rows_supports,
                      (::porta::KernelImpl{"rows", 10}))
PORTA_REGISTER_KERNEL(GlobalAveragePool, vulkan, kF32 | kF16, global_pool_vulkan<false>, global_pool_supports)
PORTA_REGISTER_KERNEL(GlobalMaxPool, vulkan, kF32 | kF16, global_pool_rows_vulkan<true>, global_pool_rows_supports,
                      (::porta::KernelImpl{"rows", 10}))
PORTA_REGISTER_KERNEL(GlobalMaxPool, vulkan, kF32 | kF16, global_pool_vulkan<true>, global_pool_supports)

}  // namespace porta::vk
