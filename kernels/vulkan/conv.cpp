// Conv and ConvTranspose on vulkan. Conv has eight implementations, tried in order. On CPU-like
// devices (lavapipe) "rows" takes the ungrouped convs with at most 16 output positions per
// image or one reading each whole image (matmul_rows.comp, streaming the packed weight),
// "grouped_rows" and
// "depthwise_rows" take grouped (at most 8 input channels
// per group) and depthwise 2-D convolutions whose 8 neighbouring outputs read at most 32
// inputs of a row (conv_depthwise_rows.comp: the kernel's shape specialized, the row segment
// fetched once per input channel), "depthwise" the other depthwise ones
// (conv_depthwise.comp: one-element texels, 4 outputs per invocation), "winograd" the 3x3
// stride-1 convs as F(2x2, 3x3) (conv_winograd.cpp: conv_winograd_*.comp around 16 batches of
// the texel GEMM),
// and "im2col" builds the columns in a scratch
// (conv_im2col.comp, 1-D to 3-D; pointwise convolutions read X in place) and multiplies them
// by the weights with the barrier-free texel GEMM (matmul_texel.comp), groups as batches of
// that GEMM. Then the implicit
// GEMM ("implicit_gemm", conv_gemm.comp: 64x64 output tiles, K = input channels x taps in tiles
// of 16, split over dispatches under a driver's loop cap) and the direct kernel ("direct",
// conv.comp: one invocation per output element), which takes the calls whose GEMM grid exceeds
// the device's workgroup counts. ConvTranspose runs conv.comp. Geometry comes from the op
// definition's helpers (ops/window.hpp), so kernel and reference agree on pads and auto_pad.
// Each Conv implementation applies what graph fusion folds into the node (a residual Add and
// the activation after it: vk_kernel.hpp's Epilogue) where it writes Y.
#include <algorithm>
#include <array>
#include <optional>

#include "kernels/vulkan/conv_common.hpp"
#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/texel_gemm.hpp"
#include "kernels/vulkan/window.hpp"
#include "ops/window.hpp"

namespace porta::vk {

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

std::optional<std::string> ungrouped_texel_conv(const KernelContext& ctx, ConvCall& c) {
  if (auto why = window_operands_ok(ctx); !why.empty()) return why;
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the implicit GEMM"); !why.empty()) return why;
  if (w.rank() != x.rank() || ctx.attrs->get_int("group", 1) <= 0) return fits_bindings(ctx);  // inference reports it
  if (ctx.attrs->get_int("group", 1) != 1) return std::string("grouped");
  try {
    c = conv_call(ctx, false);
  } catch (const Error&) {
    return fits_bindings(ctx);  // invalid attributes: the kernel reports the same error
  }
  return std::nullopt;
}

KernelDef conv_kernel(KernelFn fn, SupportsFn supports, KernelImpl impl) {
  return kernel_applying("Conv", kF32 | kF16, std::move(fn), std::move(supports), std::move(impl),
                         conv_fused_activations());
}

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
  const Epilogue epi = epilogue_of(ctx);
  if (tiles <= per) {  // one dispatch; W stands in for the unused Partial binding
    l.args.push_back(input(w));
    for (int64_t v : {int64_t{0}, K, int64_t{0}}) l.push_u(v);
    epi.add_to(l, w);
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
    epi.add_to(d, w);
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
  (transposed ? Epilogue{} : epilogue_of(ctx)).add_to(l, w);
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

void conv_direct_kernel(KernelContext& ctx) { conv_direct_vulkan(ctx, false); }
void conv_transpose_vulkan(KernelContext& ctx) { conv_direct_vulkan(ctx, true); }

// ---- "im2col": columns in a scratch, then matmul_texel.comp (CPU-like devices) ----------------

// The columns and the GEMM over them for one call (1-D, 2-D and 3-D convolutions). A pointwise
// convolution (1x1 taps, stride 1, no padding) whose channels per group are a multiple of 4
// needs no columns: each (image, group) block of X is already the (K, P) operand, read in
// place (`in_place`), as vec4 texels where the positions are a multiple of 4 too, else one
// element per texel (TexelGemm::b_scalar: 7x7 and 15x15 maps).
struct Im2col {
  int64_t n = 0, groups = 1, cin_g = 0, oc_g = 0, K = 0, Kp = 0, P = 0, ldc = 0;
  int64_t D = 1, H = 1, W = 1, OH = 1, OW = 1, KD = 1, KH = 1, KW = 1;
  int64_t sd = 1, sh = 1, sw = 1, pd = 0, ph = 0, pw = 0, dd = 1, dh = 1, dw = 1;
  int64_t chunk = 0;  // images per scratch (its columns fit one binding)
  bool in_place = false;
  uint64_t col_elems(int64_t images) const { return static_cast<uint64_t>(images * groups) * Kp * ldc; }
  // X in place as vec4 texels (its positions a multiple of 4 too), or in place by element
  // (rows of P elements: the product reads one element per texel).
  bool x_as_texels() const { return in_place && P % 4 == 0; }
  bool x_by_element() const { return in_place && P % 4 != 0; }
  // conv_im2col.comp's ROWS: output rows of 3 positions or more take an invocation per (block,
  // k, output row), its indices found once (ROWS 1 where rows are whole vec4s, 2 where a vec4
  // may run into the next row); narrower ones an invocation per 4 positions.
  bool by_rows() const { return OW >= 3; }
  int rows_spec() const { return by_rows() ? (OW % 4 == 0 ? 1 : 2) : 0; }
  // Invocations over the columns of `images` images.
  uint64_t invocations(int64_t images) const {
    return by_rows() ? static_cast<uint64_t>(images * groups * Kp * (P / OW)) : col_elems(images) / 4;
  }
  // The GEMM over the columns of images [n0, n0 + images): one batch per (image, group).
  TexelGemm gemm(bool bias, int64_t n0, int64_t images) const {
    TexelGemm g;
    g.b_scalar = x_by_element();
    g.M = oc_g, g.N = P, g.K = Kp, g.ldb = g.b_scalar ? P : ldc / 4;
    g.alpha = 1, g.beta = bias ? 1 : 0, g.scm = 1, g.scn = 0;
    g.offsets.clear();
    for (int64_t b = 0; b < images * groups; ++b) {
      int64_t grp = b % groups;
      g.offsets.insert(g.offsets.end(), {static_cast<int32_t>(grp * oc_g * Kp), static_cast<int32_t>(b * Kp * (g.b_scalar ? P : ldc)),
                                         static_cast<int32_t>(grp * oc_g),
                                         static_cast<int32_t>((n0 * groups + b) * oc_g * P)});
    }
    return g;
  }
};

Im2col im2col_of(const KernelContext& ctx, const ConvCall& c) {
  Im2col m;
  m.n = ctx.in(0).dim(0);
  m.groups = c.group;
  m.cin_g = c.c_in / c.group;
  m.oc_g = c.c_out / c.group;
  // The spatial axes from the last: W, then H, then D (absent axes keep size 1).
  const size_t s = c.g.spatial();
  auto axis = [&](size_t from_last, int64_t& in, int64_t& out, int64_t& k, int64_t& stride, int64_t& pad,
                  int64_t& dil) {
    if (from_last >= s) return;
    const size_t a = s - 1 - from_last;
    in = c.g.in[a], out = c.g.out[a], k = c.k[a], stride = c.g.strides[a], pad = c.g.pad_begin[a],
    dil = c.g.dilations[a];
  };
  int64_t od = 1;
  axis(0, m.W, m.OW, m.KW, m.sw, m.pw, m.dw);
  axis(1, m.H, m.OH, m.KH, m.sh, m.ph, m.dh);
  axis(2, m.D, od, m.KD, m.sd, m.pd, m.dd);
  m.P = shape_numel(c.g.out);
  m.ldc = (m.P + 3) / 4 * 4;
  m.K = m.cin_g * m.KD * m.KH * m.KW;
  m.Kp = (m.K + 3) / 4 * 4;
  bool unpadded = std::all_of(c.g.pad_begin.begin(), c.g.pad_begin.end(), [](int64_t v) { return v == 0; }) &&
                  c.g.out == c.g.in;
  // By element, X's columns cost 4x the fetches of vec4 texels, but less than the columns'
  // pass and its dispatch: squeezenet1_1's 1x1 convs over 15x15 and 7x7 on lavapipe
  // (--profile, per node, median of 5 processes) went from 193-357 us to 109-202 us, its
  // 64 -> 256 as well as its 256 -> 32.
  m.in_place = m.KD == 1 && m.KH == 1 && m.KW == 1 && m.sd == 1 && m.sh == 1 && m.sw == 1 && unpadded &&
               m.cin_g % 4 == 0;
  uint64_t per_image = m.col_elems(1) * dtype_size(ctx.in(0).dtype());
  m.chunk = m.in_place ? m.n
                       : std::min<int64_t>(m.n, static_cast<int64_t>(binding_limit(ctx) / std::max<uint64_t>(per_image, 1)));
  return m;
}

void push_im2col(Launch& l, const Im2col& m, uint64_t total, int64_t n0) {
  l.push_u(total);
  for (int64_t v : {m.K, m.Kp, m.ldc, n0, m.groups, m.cin_g, m.H, m.W, m.OW, m.P, m.KH, m.KW, m.sh, m.sw, m.ph, m.pw,
                    m.dh, m.dw, m.D, m.OH, m.KD, m.sd, m.pd, m.dd})
    l.push_u(v);
}

// The columns of images [n0, n0 + images) into `col` (conv_im2col.comp).
void launch_im2col(KernelContext& ctx, const Im2col& m, const Tensor& x, const Tensor& col, int64_t n0,
                   int64_t images) {
  Launch l;
  l.shader = "conv_im2col";
  l.variant = variant_for(x.dtype());
  l.args = {scalar_texels(x), output(col)};
  const uint64_t total = m.invocations(images);
  push_im2col(l, m, total, n0);
  // SMALL: every index below 2^21 (4-position invocations also index positions < 4 x total).
  l.spec = {(m.by_rows() ? total : total * 4) < kDiv21Bound ? 1 : 0, m.rows_spec()};
  l.local_size = 64;
  set_grid(l, device_caps(ctx), (total + 63) / 64);
  launch(ctx, std::move(l));
}

void conv_im2col_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConvCall c = conv_call(ctx, false);
  const Im2col m = im2col_of(ctx, c);
  // Weight rows padded to whole texels (once per session: weights are constants there).
  Tensor wp = m.K != m.Kp ? pack_input(ctx, 1, 1, c.c_out, m.K, c.c_out, m.Kp) : w;
  const bool bias = ctx.has_input(2);
  const Epilogue epi = epilogue_of(ctx);
  if (m.in_place) {
    launch_texel_gemm(ctx, m.gemm(bias, 0, m.n), wp, x, bias ? &ctx.in(2) : nullptr, y, epi);
    return;
  }
  // Images in chunks whose columns fit one binding; one scratch serves them all.
  Tensor col = Tensor::empty({static_cast<int64_t>(m.col_elems(m.chunk))}, x.dtype(), ctx.device);
  for (int64_t n0 = 0; n0 < m.n; n0 += m.chunk) {
    int64_t images = std::min(m.chunk, m.n - n0);
    launch_im2col(ctx, m, x, col, n0, images);
    launch_texel_gemm(ctx, m.gemm(bias, n0, images), wp, col, bias ? &ctx.in(2) : nullptr, y, epi);
  }
}

std::string conv_im2col_supports(const KernelContext& ctx) {
  if (auto why = window_operands_ok(ctx); !why.empty()) return why;
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  const int64_t y_numel = ctx.outputs.empty() ? 0 : ctx.outputs[0].numel();
  if (auto why = float_texels_ok(ctx, x.dtype(), "the implicit GEMM"); !why.empty()) return why;
  if (w.rank() != x.rank() || ctx.attrs->get_int("group", 1) <= 0) return fits_bindings(ctx);  // inference reports it
  try {
    const ConvCall c = conv_call(ctx, false);
    const Im2col m = im2col_of(ctx, c);
    if (m.in_place) {
      if (!m.x_as_texels())
        if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
      if (auto why = texel_gemm_fits(ctx, m.gemm(false, 0, m.n), c.c_out * m.Kp, x.numel()); !why.empty()) return why;
      return fits_bindings(ctx);
    }
    if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
    if (m.chunk < 1)
      return str("the columns of one image take ", m.col_elems(1) * dtype_size(x.dtype()),
                 " bytes, more than the device's maxStorageBufferRange (", binding_limit(ctx), ")");
    if (m.col_elems(m.chunk) >= (uint64_t{1} << 31)) return "its columns have more than 2^31 elements";
    if (m.by_rows())  // per output row, the vec4 loop and its 4 gathers
      if (auto why = loop_budget_ok(ctx, static_cast<uint64_t>(m.OW / 4 + 2) * 6 + 8, str("an output row of ", m.OW));
          !why.empty())
        return why;
    if (auto why = texel_gemm_fits(ctx, m.gemm(false, 0, m.chunk), c.c_out * m.Kp, static_cast<int64_t>(m.col_elems(m.chunk)));
        !why.empty())
      return why;
    if (y_numel >= (int64_t{1} << 31)) return "the output has more than 2^31 elements";
  } catch (const Error&) {
    // invalid attributes: the kernel reports the same error
  }
  return fits_bindings(ctx);
}

// ---- "depthwise": group = input channels, 2-D, CPU-like devices (conv_depthwise.comp) --------

// ---- "depthwise_rows": conv_depthwise_rows.comp, a block of outputs per invocation -----------
// The kernel's shape, strides and dilations are specialized, and the input segment the 8 (or
// 4) outputs of a row share (at most kDepthwiseSpan elements: 7 * stride + (KW - 1) * dilation
// + 1) is fetched once, as 4-element texels where the input's width is a multiple of 4. Kernels
// up to kDepthwiseMaxKernel a side; other depthwise convs take "depthwise" (conv_depthwise.comp).
constexpr int64_t kDepthwiseSpan = 32, kDepthwiseMaxKernel = 11;

bool depthwise_rows_fit(const ConvCall& c) {
  return c.k[0] <= kDepthwiseMaxKernel && c.k[1] <= kDepthwiseMaxKernel &&
         7 * c.g.strides[1] + (c.k[1] - 1) * c.g.dilations[1] + 1 <= kDepthwiseSpan;
}

// The block each invocation computes: `rows` output rows by `outs` outputs of a row. On
// lavapipe a block's cost is mostly its registers: measured over chains of depthwise convs, 8
// outputs a row beat 4 and 16 (32x32 maps, 3x3: 16 accumulators spill), 4 rows of 4 outputs
// beat one row over maps at most 4 wide (0.8x: the whole map per invocation), and 2 rows of 8
// beat one for 5x5 kernels (0.85x: 4 of the 6 input rows shared) but not for 3x3 (1.15x).
// Blocks of rows need them dense (no vertical dilation, stride at most 2) and kernels of at
// most 5 rows and 25 taps (the shader holds a block's weights in registers and its loops must
// unroll: a 7x7 block ran 17x slower), and enough blocks left to keep every thread of the
// driver busy (kDepthwiseBlocksWanted invocations).
struct DepthwiseBlock {
  int64_t rows = 1, outs = 8, octs = 0, blocks = 0;
  uint64_t total = 0;  // invocations
};
constexpr uint64_t kDepthwiseBlocksWanted = 512;

DepthwiseBlock depthwise_block(const KernelContext& ctx, const ConvCall& c) {
  DepthwiseBlock b;
  const int64_t OH = c.g.out[0], OW = c.g.out[1];
  b.outs = OW <= 4 ? 4 : 8;
  b.octs = (OW + b.outs - 1) / b.outs;
  const uint64_t planes = static_cast<uint64_t>(ctx.in(0).dim(0) * c.c_out);
  const bool dense = c.g.dilations[0] == 1 && c.g.strides[0] <= 2 && c.k[0] <= 5 && c.k[0] * c.k[1] <= 25;
  const int64_t wanted = !dense ? 1 : b.outs == 4 ? 4 : c.k[0] >= 5 ? 2 : 1;
  for (int64_t rows = wanted;; rows /= 2) {
    b.rows = rows;
    b.blocks = (OH + rows - 1) / rows;
    b.total = planes * static_cast<uint64_t>(b.blocks) * static_cast<uint64_t>(b.octs);
    if (rows == 1 || (OH >= rows && b.total >= kDepthwiseBlocksWanted)) break;
  }
  return b;
}

void conv_depthwise_rows_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConvCall c = conv_call(ctx, false);
  const bool bias = ctx.has_input(2);
  const DepthwiseBlock b = depthwise_block(ctx, c);
  Launch l;
  l.shader = "conv_depthwise_rows";
  l.variant = variant_for(x.dtype());
  l.local_size = 64;
  // Rows of 4-element texels where every row starts on one (the input's width a multiple of 4)
  // and X's texels fit the device's limit.
  const bool vec4 = c.g.in[1] % 4 == 0 && x.offset() % 4 == 0 &&
                    static_cast<uint64_t>((x.numel() + 3) / 4) <= device_caps(ctx).max_texels;
  l.args = {vec4 ? texels(x) : scalar_texels(x), scalar_texels(w), scalar_texels(bias ? ctx.in(2) : w), output(y)};
  l.push_u(b.total);
  for (int64_t v : {b.octs, b.blocks, c.c_in, c.g.in[0], c.g.in[1], c.c_out, c.g.out[0], c.g.out[1],
                    c.c_out / c.group, c.g.pad_begin[0], c.g.pad_begin[1]})
    l.push_u(v);
  l.push_u(bias ? 1 : 0);
  l.push_u((x.numel() + 3) / 4);
  const Epilogue epi = epilogue_of(ctx);
  epi.add_to(l, w);
  l.spec.push_back(b.total < kDiv21Bound ? 1 : 0);  // SMALL: every index is below total
  for (int64_t v : {c.k[0], c.k[1], c.g.strides[1], c.g.dilations[1]}) l.spec.push_back(static_cast<int32_t>(v));
  l.spec.push_back(vec4 ? 1 : 0);
  l.spec.push_back(static_cast<int32_t>((4 - c.g.pad_begin[1] % 4) % 4));  // ALIGN
  for (int64_t v : {c.c_in / c.group, c.g.strides[0], c.g.dilations[0], b.rows, b.outs})  // CPG, SH, DH, ROWS, OUTS
    l.spec.push_back(static_cast<int32_t>(v));
  // Y and R again, as 4-element vectors, where every output row starts on one.
  const bool vec_out = c.g.out[1] % 4 == 0 && y.offset() % 4 == 0 && (!epi.residual || epi.residual->offset() % 4 == 0);
  l.spec.push_back(vec_out ? 1 : 0);
  l.args.push_back(output(y));
  l.args.push_back(input(epi.residual ? *epi.residual : w));
  set_grid(l, device_caps(ctx), (b.total + 63) / 64);
  launch(ctx, std::move(l));
}

void conv_depthwise_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConvCall c = conv_call(ctx, false);
  const bool bias = ctx.has_input(2);
  const int64_t OW = c.g.out[1], quads = (OW + 3) / 4;
  const uint64_t total = static_cast<uint64_t>(y.numel() / OW) * static_cast<uint64_t>(quads);
  Launch l;
  l.shader = "conv_depthwise";
  l.variant = variant_for(x.dtype());
  l.local_size = 64;
  l.args = {scalar_texels(x), scalar_texels(w), scalar_texels(bias ? ctx.in(2) : w), output(y)};
  l.push_u(total);
  l.push_u(quads);
  for (int64_t v : {c.c_in, c.g.in[0], c.g.in[1], c.c_out, c.g.out[0], OW, c.c_out / c.c_in, c.k[0], c.k[1],
                    c.g.strides[0], c.g.strides[1], c.g.pad_begin[0], c.g.pad_begin[1], c.g.dilations[0],
                    c.g.dilations[1]})
    l.push_u(v);
  l.push_u(bias ? 1 : 0);
  epilogue_of(ctx).add_to(l, w);
  l.spec.push_back(total < kDiv21Bound ? 1 : 0);  // SMALL: every index is below total
  set_grid(l, device_caps(ctx), (total + 63) / 64);
  launch(ctx, std::move(l));
}

// What the depthwise implementations (and, `grouped`, "grouped_rows") take: a 2-D convolution
// whose group is the input channels (grouped: more than one group of at least two channels), in
// float texels. `call` is set when the attributes are valid (else the kernel reports the error
// and the caller's checks of the call are skipped).
std::string depthwise_operands_ok(const KernelContext& ctx, std::optional<ConvCall>& call, bool grouped = false) {
  if (auto why = window_operands_ok(ctx); !why.empty()) return why;
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the implicit GEMM"); !why.empty()) return why;
  if (w.rank() != x.rank() || ctx.attrs->get_int("group", 1) <= 0) return "";  // inference reports it
  if (x.rank() != 4) return "not a 2-D convolution";
  int64_t group = ctx.attrs->get_int("group", 1);
  if (grouped && (group == 1 || group == x.dim(1)))
    return str("group ", group, group == 1 ? ": not grouped" : " is the input channels: depthwise");
  if (!grouped && (group != x.dim(1) || group == 1))
    return str("group ", group, " is not the input channels (", x.dim(1), "): not depthwise");
  try {
    call = conv_call(ctx, false);
  } catch (const Error&) {
    return "";  // invalid attributes: the kernel reports the same error
  }
  if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
  return scalar_texels_ok(ctx, w);
}

// "depthwise": 4 outputs of a row per invocation; the kernel's taps are loops.
std::string conv_depthwise_supports(const KernelContext& ctx) {
  std::optional<ConvCall> c;
  if (auto why = depthwise_operands_ok(ctx, c); !why.empty()) return why;
  if (c) {
    const uint64_t quads = static_cast<uint64_t>((c->g.out[1] + 3) / 4);
    const uint64_t rows = static_cast<uint64_t>(ctx.in(0).dim(0) * c->c_out * c->g.out[0]);  // N * OC * OH
    if (auto why = grid_ok(ctx, (rows * quads + 63) / 64, "the output's quads"); !why.empty()) return why;
    const uint64_t kh = static_cast<uint64_t>(c->k[0]), kw = static_cast<uint64_t>(c->k[1]);
    // The KH loop, per row the KW loop, per tap the 4 outputs' loop, the store loop.
    if (auto why = loop_budget_ok(ctx, kh + 1 + kh * (kw + 1) + kh * kw * 5 + 5, "the kernel's taps"); !why.empty())
      return why;
  }
  return fits_bindings(ctx);
}

// "depthwise_rows": where the row segment of 8 outputs fits the registers
// (depthwise_rows_fit). Its loops are unrolled (the kernel's sides and the horizontal stride
// and dilation are specialization constants), so no loop grows with the data.
// What conv_depthwise_rows.comp needs of a call: the row segment fits (depthwise_rows_fit),
// and its row segments fit the grid. "" or the reason.
std::string row_kernel_ok(const KernelContext& ctx, const ConvCall& c) {
  if (!depthwise_rows_fit(c))
    return str("a ", c.k[0], " x ", c.k[1], " kernel with horizontal stride ", c.g.strides[1], " and dilation ",
               c.g.dilations[1], ": 8 outputs read more than ", kDepthwiseSpan, " inputs of a row (or a side is past ",
               kDepthwiseMaxKernel, ")");
  return grid_ok(ctx, (depthwise_block(ctx, c).total + 63) / 64, "the output's row segments");
}

std::string conv_depthwise_rows_supports(const KernelContext& ctx) {
  std::optional<ConvCall> c;
  if (auto why = depthwise_operands_ok(ctx, c); !why.empty()) return why;
  if (c)
    if (auto why = row_kernel_ok(ctx, *c); !why.empty()) return why;
  return fits_bindings(ctx);
}

// ---- "rows": Convs that are a product with a few rows (matmul_rows.comp) ---------------------
// The rows kernel streams W (packed once per session step) once per image, for all of its rows
// of the product at once (at most kRowsMax), where the texel GEMM gives each SIMD lane of
// lavapipe its own rows of W whenever a product has fewer than 8 column tiles, so its gathers
// touch 8 rows K elements apart.
//  - "whole image": one output per image reading all of it (a 1x1 conv over a 1x1 map, as
//    squeeze-excite's two layers; any unpadded kernel the size of its input), up to 8 images:
//    Y [n, OC] = X [n, C x spatial] x W [OC, C x taps]^T + B. K not a multiple of 4: X through
//    a zero-padded copy.
//  - "small map": at most kConvRowsPositions output positions per image (a CNN's last stages
//    at small inputs; 7x7 maps at 224x224 take the texel GEMM): per image Y [OC, P] = W x
//    cols [K, P], the product's rows being the columns of "im2col"'s scratch (or X itself, for
//    a pointwise conv whose channels are a multiple of 4: by element where its positions are
//    not).
constexpr int64_t kConvRowsImages = 8, kConvRowsPositions = kRowsMax;

enum class ConvRowsForm { none, whole_image, small_map };

ConvRowsForm conv_rows_form(const KernelContext& ctx, const ConvCall& c, std::string& why) {
  const Tensor& x = ctx.in(0);
  bool whole = true;
  for (size_t d = 0; d < c.g.spatial(); ++d)
    whole = whole && c.g.out[d] == 1 && c.k[d] == c.g.in[d] && !c.g.pad_begin[d] && !c.g.pad_end[d];
  if (whole && x.dim(0) <= kConvRowsImages) return ConvRowsForm::whole_image;
  const int64_t positions = shape_numel(c.g.out);
  if (positions <= kConvRowsPositions) return ConvRowsForm::small_map;
  why = str("neither one output per image over at most ", kConvRowsImages, " images (output ", shape_str(c.g.out),
            ", kernel ", shape_str(c.k), " over ", shape_str(c.g.in), ", ", x.dim(0), " images) nor at most ",
            kConvRowsPositions, " output positions per image (", positions, ")");
  return ConvRowsForm::none;
}

// The small-map form's operands: the columns (or X in place) as the product's A.
RowsGemm conv_rows_small_map(const Im2col& m, int64_t oc) {
  RowsGemm g;
  g.N = oc, g.Kp = m.Kp, g.rows = m.P, g.a_t = true, g.lda = m.ldc / 4;
  g.a_img = m.Kp * m.ldc / 4;
  if (m.x_by_element()) {
    g.a_scalar = true;
    g.lda = m.P;
    g.a_img = m.K * m.P;
  }
  g.y_img = oc * m.P, g.ym = 1, g.yn = m.P;
  g.scm = 0, g.scn = 1;
  return g;
}

void conv_rows_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConvCall c = conv_call(ctx, false);
  std::string why;
  const ConvRowsForm form = conv_rows_form(ctx, c, why);
  if (form == ConvRowsForm::none) throw BackendError(str("[Conv] ", why, " (supports should decline)"));
  const Tensor* bias = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  const int64_t oc = w.dim(0), K = oc ? w.numel() / oc : 0, Kp = (K + 3) / 4 * 4;
  const Epilogue epi = epilogue_of(ctx);
  if (form == ConvRowsForm::small_map) {
    const Im2col m = im2col_of(ctx, c);
    const RowsWeight wp = rows_weight(ctx, 1, oc, K, true, true, m.P);
    RowsGemm g = conv_rows_small_map(m, oc);
    if (m.in_place) {
      g.images = m.n;
      launch_rows_gemm(ctx, g, x, wp, bias, y, epi);
      return;
    }
    Tensor col = Tensor::empty({static_cast<int64_t>(m.col_elems(m.chunk))}, x.dtype(), ctx.device);
    for (int64_t n0 = 0; n0 < m.n; n0 += m.chunk) {
      g.images = std::min(m.chunk, m.n - n0);
      g.y_base = n0 * oc * m.P;
      launch_im2col(ctx, m, x, col, n0, g.images);
      launch_rows_gemm(ctx, g, col, wp, bias, y, epi);
    }
    return;
  }
  const int64_t n = x.dim(0);
  RowsGemm g;
  g.N = oc, g.Kp = Kp, g.rows = n, g.ym = oc, g.yn = 1, g.scm = 0, g.scn = 1;
  launch_rows_gemm(ctx, g, Kp != K ? pack_input(ctx, 0, 1, n, K, n, Kp) : x, rows_weight(ctx, 1, oc, K, true, false, n),
                   bias, y, epi);
}

std::string conv_rows_supports(const KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  ConvCall c;
  if (auto answer = ungrouped_texel_conv(ctx, c)) return *answer;
  std::string why;
  const ConvRowsForm form = conv_rows_form(ctx, c, why);
  if (form == ConvRowsForm::none) return why;
  const int64_t oc = w.dim(0), K = oc ? w.numel() / oc : 0;
  if (K == 0) return "no input channels (nothing to stream)";
  const DeviceCaps& caps = device_caps(ctx);
  if (form == ConvRowsForm::small_map) {
    const Im2col m = im2col_of(ctx, c);
    if (!m.x_as_texels()) {  // the columns, or X by element
      if (auto why2 = scalar_texels_ok(ctx, x); !why2.empty()) return why2;
      if (!m.in_place && m.chunk < 1)
        return str("the columns of one image take ", m.col_elems(1) * dtype_size(x.dtype()),
                   " bytes, more than the device's maxStorageBufferRange (", binding_limit(ctx), ")");
    }
    const uint64_t a_texels = m.x_as_texels() ? static_cast<uint64_t>(x.numel()) / 4
                              : m.in_place    ? static_cast<uint64_t>(x.numel())
                                              : m.col_elems(m.chunk) / 4;
    if (a_texels > caps.max_texels || a_texels >= (uint64_t{1} << 31))
      return str("its columns take ", a_texels, " texels, more than maxTexelBufferElements (", caps.max_texels,
                 ") or 2^31");
    if (auto why2 = rows_gemm_ok(ctx, 1, oc, K, true, true, m.in_place ? m.n : m.chunk, m.P); !why2.empty()) return why2;
  } else {
    if (static_cast<uint64_t>(x.dim(0) * ((K + 3) / 4)) > caps.max_texels) return "X exceeds maxTexelBufferElements";
    if (auto why2 = rows_gemm_ok(ctx, 1, oc, K, true, false, 1, x.dim(0)); !why2.empty()) return why2;
  }
  if (ctx.outputs.empty() ? false : ctx.outputs[0].numel() >= (int64_t{1} << 31))
    return "the output has more than 2^31 elements";
  return fits_bindings(ctx);
}

// "grouped_rows": conv_depthwise_rows.comp over the cpg input channels of each group, where
// groups have at most kGroupedRowsChannels of them (RegNet's groups of 8, ResNeXt's first
// stages): per output 9 x cpg multiply-adds for a 3x3 kernel, which the texel GEMM ran as
// one batch per group of a few rows each, after an im2col pass. Larger groups keep "im2col".
constexpr int64_t kGroupedRowsChannels = 8;

std::string conv_grouped_rows_supports(const KernelContext& ctx) {
  std::optional<ConvCall> c;
  if (auto why = depthwise_operands_ok(ctx, c, true); !why.empty()) return why;
  if (c) {
    const int64_t cpg = c->c_in / c->group;
    if (cpg > kGroupedRowsChannels)
      return str(cpg, " input channels per group (more than ", kGroupedRowsChannels, ")");
    if (auto why = row_kernel_ok(ctx, *c); !why.empty()) return why;
    // The channel loop (its taps unrolled), and the store loop.
    if (auto why = loop_budget_ok(ctx, static_cast<uint64_t>(cpg) + 1 + 9, "the channels of a group"); !why.empty())
      return why;
  }
  return fits_bindings(ctx);
}

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

const bool conv_registered[] = {
    register_kernel_at_load(conv_kernel(conv_rows_vulkan, conv_rows_supports, {"rows", 7})),
    register_kernel_at_load(conv_kernel(conv_depthwise_rows_vulkan, conv_grouped_rows_supports, {"grouped_rows", 6})),
    register_kernel_at_load(conv_kernel(conv_depthwise_rows_vulkan, conv_depthwise_rows_supports, {"depthwise_rows", 5})),
    register_kernel_at_load(conv_kernel(conv_depthwise_vulkan, conv_depthwise_supports, {"depthwise", 4})),
    register_kernel_at_load(conv_kernel(conv_im2col_vulkan, conv_im2col_supports, {"im2col", 2})),
    register_kernel_at_load(conv_kernel(conv_gemm_vulkan, conv_gemm_supports, {"implicit_gemm", 1})),
    register_kernel_at_load(conv_kernel(conv_direct_kernel, conv_direct_supports, {"direct", 0}))};

}  // namespace

PORTA_REGISTER_KERNEL(ConvTranspose, vulkan, kF32 | kF16, conv_transpose_vulkan, conv_direct_supports)

}  // namespace porta::vk
