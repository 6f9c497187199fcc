// Conv on CPU-like Vulkan devices, implementation "winograd" (conv.cpp has the others and
// their order): 3x3 stride-1 convs as F(2x2, 3x3).
#include <algorithm>
#include <array>

#include "kernels/vulkan/conv_common.hpp"
#include "kernels/vulkan/texel_gemm.hpp"
#include "kernels/vulkan/window.hpp"

namespace porta::vk {
namespace {

// ---- "winograd": 3x3 stride-1 convs as F(2x2, 3x3) (CPU-like devices) ----------------------
// Each 2x2 tile of Y costs 16 multiply-adds per (input, output) channel pair instead of 36:
// the input's 4x4 patches are transformed (conv_winograd_input.comp), multiplied by the
// transformed weights as 16 batches of the texel GEMM (matmul_texel.comp; the weights'
// transform, conv_winograd_weights.comp, runs once per session step), and the 16 products
// transformed back into the tiles (conv_winograd_output.comp, which applies the bias and the
// fused epilogue). The transformed operands and the products are f32 for f16 calls too (f16
// inputs are read through R16F texels, Y written in f16). Three dispatches where "im2col" has
// two, so it takes convs with at least kWinogradMinChannels input and output channels, where
// the products dominate, and maps large enough that the tiles do not waste what they save.
constexpr int64_t kWinogradMinChannels = 16;

struct Winograd {
  int64_t n = 0, C = 0, Cp = 0, OC = 0, H = 0, W = 0, OH = 0, OW = 0, TH = 0, TQ = 0, ph = 0, pw = 0;
  int64_t chunk = 0;  // images per pass (the transformed operands fit one binding each)
  int64_t quads(int64_t images) const { return images * TH * TQ; }  // 4-tile groups
  int64_t tiles(int64_t images) const { return 4 * quads(images); }
  uint64_t v_elems(int64_t images) const { return static_cast<uint64_t>(16 * Cp * tiles(images)); }
  uint64_t m_elems(int64_t images) const { return static_cast<uint64_t>(16 * OC * tiles(images)); }
  // The 16 products of images [0, images): M[xi] (OC, T) = U[xi] (OC, Cp) x V[xi] (Cp, T).
  TexelGemm gemm(int64_t images) const {
    TexelGemm g;
    const int64_t T = tiles(images);
    g.M = OC, g.N = T, g.K = Cp, g.ldb = T / 4;
    g.offsets.clear();
    for (int64_t xi = 0; xi < 16; ++xi)
      g.offsets.insert(g.offsets.end(), {static_cast<int32_t>(xi * OC * Cp), static_cast<int32_t>(xi * Cp * T), 0,
                                         static_cast<int32_t>(xi * OC * T)});
    return g;
  }
};

Winograd winograd_of(const KernelContext& ctx, const ConvCall& c) {
  Winograd m;
  m.n = ctx.in(0).dim(0);
  m.C = c.c_in, m.Cp = (c.c_in + 3) / 4 * 4, m.OC = c.c_out;
  m.H = c.g.in[0], m.W = c.g.in[1], m.OH = c.g.out[0], m.OW = c.g.out[1];
  m.TH = (m.OH + 1) / 2;
  m.TQ = ((m.OW + 1) / 2 + 3) / 4;
  m.ph = c.g.pad_begin[0], m.pw = c.g.pad_begin[1];
  const uint64_t per_image = std::max(m.v_elems(1), m.m_elems(1)) * sizeof(float);
  const uint64_t fit = std::min(binding_limit(ctx), uint64_t{1} << 33) / std::max<uint64_t>(per_image, 1);
  m.chunk = std::min<int64_t>(m.n, static_cast<int64_t>(fit));
  return m;
}

void conv_winograd_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConvCall c = conv_call(ctx, false);
  const Winograd m = winograd_of(ctx, c);
  const DeviceCaps& caps = device_caps(ctx);
  Tensor u = derive_input(ctx, 1, {-16, m.OC, m.C, m.Cp, 0}, [&] {
    Tensor t = Tensor::empty({16 * m.OC * m.Cp}, DType::f32, ctx.device);
    Launch l;
    l.shader = "conv_winograd_weights";
    l.local_size = 64;
    l.args = {scalar_texels(ctx.in(1)), output(t)};
    const uint64_t total = static_cast<uint64_t>(m.OC * m.Cp / 4);
    for (int64_t v : {static_cast<int64_t>(total), m.C, m.Cp, m.OC}) l.push_u(v);
    set_grid(l, caps, (total + 63) / 64);
    launch(ctx, std::move(l));
    return t;
  });
  const Tensor* bias = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  const Epilogue epi = epilogue_of(ctx);
  Tensor v = Tensor::empty({static_cast<int64_t>(m.v_elems(m.chunk))}, DType::f32, ctx.device);
  Tensor prod = Tensor::empty({static_cast<int64_t>(m.m_elems(m.chunk))}, DType::f32, ctx.device);
  for (int64_t n0 = 0; n0 < m.n; n0 += m.chunk) {
    const int64_t images = std::min(m.chunk, m.n - n0), quads = m.quads(images);
    Launch in;
    in.shader = "conv_winograd_input";
    in.local_size = 64;
    in.args = {scalar_texels(x), output(v)};
    const uint64_t in_total = static_cast<uint64_t>(m.Cp * quads);
    for (int64_t a : {static_cast<int64_t>(in_total), quads, n0, m.C, m.Cp, m.H, m.W, m.TH, m.TQ}) in.push_u(a);
    in.push_i(m.ph);
    in.push_i(m.pw);
    set_grid(in, caps, (in_total + 63) / 64);
    launch(ctx, std::move(in));
    // The GEMM reads the first 16 x Cp x T elements of V and writes as many of `prod` as it
    // has products (a last, smaller chunk uses the front of both scratches).
    launch_texel_gemm(ctx, m.gemm(images), u, v, nullptr, prod);
    Launch out;
    out.shader = "conv_winograd_output";
    out.variant = variant_for(y.dtype());
    out.local_size = 64;
    out.args = {texels(prod), input(bias ? *bias : prod), output(y)};
    const uint64_t out_total = static_cast<uint64_t>(m.OC * quads);
    for (int64_t a : {static_cast<int64_t>(out_total), quads, n0, m.OC, m.OH, m.OW, m.TH, m.TQ}) out.push_u(a);
    out.push_u(bias ? 1 : 0);
    out.spec = {m.OW % 4 == 0 ? 1 : 0};
    epi.add_to(out, prod);
    out.args.push_back(output(y));
    out.args.push_back(input(epi.residual ? *epi.residual : prod));
    set_grid(out, caps, (out_total + 63) / 64);
    launch(ctx, std::move(out));
  }
}

std::string conv_winograd_supports(const KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  ConvCall c;
  if (auto answer = ungrouped_texel_conv(ctx, c)) return *answer;
  if (x.rank() != 4) return "not a 2-D convolution";
  if (c.k != Shape{3, 3} || c.g.strides != std::vector<int64_t>{1, 1} || c.g.dilations != std::vector<int64_t>{1, 1})
    return str("kernel ", shape_str(c.k), ", strides ", shape_str(c.g.strides), ", dilations ",
               shape_str(c.g.dilations), ": F(2x2, 3x3) takes 3x3 kernels of stride 1 and dilation 1");
  if (c.c_in < kWinogradMinChannels || c.c_out < kWinogradMinChannels)
    return str(c.c_in, " -> ", c.c_out, " channels (fewer than ", kWinogradMinChannels,
               "): the transforms' extra dispatch outweighs the saved products");
  const Winograd m = winograd_of(ctx, c);
  // Products per channel pair: 16 per computed tile (rows of tiles padded to groups of 4)
  // against im2col's 9 per output. Small maps waste most of their tiles (2x2: one tile of four
  // computed, 64 products for 36); past 3/4 of im2col's count the transforms lose.
  const int64_t tile_products = 16 * m.TH * m.TQ * 4, direct_products = 9 * m.OH * m.OW;
  if (4 * tile_products > 3 * direct_products)
    return str("an output of ", m.OH, " x ", m.OW, ": its tiles take ", tile_products,
               " products per channel pair, more than 3/4 of im2col's ", direct_products);
  if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
  if (auto why = scalar_texels_ok(ctx, w); !why.empty()) return why;
  if (m.chunk < 1)
    return str("the transformed operands of one image take ", std::max(m.v_elems(1), m.m_elems(1)) * sizeof(float),
               " bytes, more than one binding (", binding_limit(ctx), ")");
  const uint64_t limit31 = uint64_t{1} << 31;
  if (m.v_elems(m.chunk) >= limit31 || m.m_elems(m.chunk) >= limit31 || 16 * m.OC * m.Cp >= int64_t{1} << 31)
    return "a transformed operand has 2^31 elements or more";
  if (m.m_elems(m.chunk) / 4 > device_caps(ctx).max_texels) return "the products exceed maxTexelBufferElements";
  if (auto why = texel_gemm_fits(ctx, m.gemm(m.chunk), 16 * m.OC * m.Cp, static_cast<int64_t>(m.v_elems(m.chunk)));
      !why.empty())
    return why;
  if (auto why = grid_ok(ctx, (static_cast<uint64_t>(m.Cp * m.quads(m.chunk)) + 63) / 64, "the input's tiles");
      !why.empty())
    return why;
  if (auto why = grid_ok(ctx, (static_cast<uint64_t>(m.OC * m.quads(m.chunk)) + 63) / 64, "the output's tiles");
      !why.empty())
    return why;
  return fits_bindings(ctx);
}

const bool winograd_registered =
    register_kernel_at_load(conv_kernel(conv_winograd_vulkan, conv_winograd_supports, {"winograd", 3}));

}  // namespace
}  // namespace porta::vk
