// PreActConv (ai.porta) on vulkan, f32 or f16 storage with fp32 accumulation, "texel" (CPU-like
// devices): one dispatch where the op's nodes ran two (BatchNormalization with its activation,
// writing the whole normalized map, then the Conv reading it). The pointwise conv is the
// product Y[n] (M x P) = W (M x C) x X[n] (C x P) that Conv's kernels run on X in place, and
// each channel of X is mapped as it is read (act(x * Scale + Shift): the PRE constant of
// matmul_rows.comp and matmul_texel.comp, Scale and Shift fetched as vec4 texels once per 4
// channels):
//  - maps of at most kRowsMax positions: the "rows" product (positions as its rows, W packed
//    and streamed once per image), as Conv's "rows";
//  - larger maps: the texel GEMM, one batch per image, as Conv's "im2col" over X in place.
// X is read as vec4 texels where the positions are a multiple of 4, else one element per
// texel. Channels no multiple of 4, an X, W, Scale or Shift starting inside a texel, and GPUs
// (the composite: a scale-shift pass, then the device's Conv) decline. The Conv's fused
// activation (porta_activation) applies where Y is written.
#include "kernels/vulkan/texel_gemm.hpp"
#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/fused_activation.hpp"

namespace porta::vk {
namespace {

struct Pointwise {
  int64_t n = 0, C = 0, M = 0, P = 0;
  bool vec = false;  // X as vec4 texels: positions a multiple of 4
  explicit Pointwise(const KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    n = x.dim(0), C = x.dim(1), M = ctx.in(3).dim(0);
    P = shape_numel(Shape(x.shape().begin() + 2, x.shape().end()));
    vec = P % 4 == 0;
  }
  bool rows() const { return P <= kRowsMax; }
};

ChannelMap channel_map(const KernelContext& ctx) {
  const opdef::FusedActivation f = opdef::parse_fused_activation(*ctx.attrs, "PreActConv", "activation");
  return ChannelMap{&ctx.in(1), &ctx.in(2), static_cast<int32_t>(f.kind), f.alpha, f.beta};
}

RowsGemm rows_product(const Pointwise& s) {
  RowsGemm g;
  g.N = s.M, g.Kp = s.C, g.rows = s.P, g.a_t = true, g.images = s.n;
  g.a_scalar = !s.vec;
  g.lda = s.vec ? s.P / 4 : s.P;
  g.a_img = s.vec ? s.C * s.P / 4 : s.C * s.P;
  g.y_img = s.M * s.P, g.ym = 1, g.yn = s.P, g.scm = 0, g.scn = 1;
  return g;
}

TexelGemm texel_product(const Pointwise& s, bool bias) {
  TexelGemm g;
  g.M = s.M, g.N = s.P, g.K = s.C;
  g.b_scalar = !s.vec;
  g.ldb = s.vec ? s.P / 4 : s.P;
  g.alpha = 1, g.beta = bias ? 1 : 0, g.scm = 1, g.scn = 0;
  g.offsets.clear();
  for (int64_t i = 0; i < s.n; ++i)
    g.offsets.insert(g.offsets.end(), {0, static_cast<int32_t>(i * s.C * s.P), 0, static_cast<int32_t>(i * s.M * s.P)});
  return g;
}

void pre_act_conv_texel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const Pointwise s(ctx);
  const Tensor* bias = ctx.has_input(4) ? &ctx.in(4) : nullptr;
  const Epilogue epi = epilogue_of(ctx);
  if (s.rows()) {
    RowsGemm g = rows_product(s);
    g.pre = channel_map(ctx);
    launch_rows_gemm(ctx, g, x, rows_weight(ctx, 3, s.M, s.C, true, true, s.P), bias, y, epi);
    return;
  }
  TexelGemm g = texel_product(s, bias != nullptr);
  g.pre = channel_map(ctx);
  launch_texel_gemm(ctx, g, ctx.in(3), x, bias, y, epi);
}

std::string pre_act_conv_texel_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the composite (a scale-shift pass, then the device's Conv)");
      !why.empty())
    return why;
  if (x.rank() < 3 || ctx.in(3).rank() < 2) return fits_bindings(ctx);  // inference reports it
  const Pointwise s(ctx);
  if (s.C % 4 || s.C == 0)
    return str(s.C, " input channels (a positive multiple of 4: whole texels of Scale and Shift)");
  if ((s.vec && x.offset() % 4) || ctx.in(1).offset() % 4 || ctx.in(2).offset() % 4 || ctx.in(3).offset() % 4)
    return "X, Scale, Shift or W starts inside a texel";
  if (x.numel() >= (int64_t{1} << 31) || (!ctx.outputs.empty() && ctx.outputs[0].numel() >= (int64_t{1} << 31)))
    return "X or Y has more than 2^31 elements";
  if (!s.vec)
    if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
  const uint64_t x_texels = static_cast<uint64_t>(s.vec ? x.numel() / 4 : x.numel());
  if (x_texels > device_caps(ctx).max_texels)
    return str("X takes ", x_texels, " texels, more than maxTexelBufferElements (", device_caps(ctx).max_texels, ")");
  if (s.rows()) {
    if (auto why = rows_gemm_ok(ctx, 3, s.M, s.C, true, true, s.n, s.P); !why.empty()) return why;
  } else if (auto why = texel_gemm_fits(ctx, texel_product(s, false), s.M * s.C, x.numel()); !why.empty()) {
    return why;
  }
  return fits_bindings(ctx);
}

const bool registered = [] {
  register_kernel_at_load(kernel_applying("PreActConv", kF32 | kF16, pre_act_conv_texel, pre_act_conv_texel_supports,
                                          {"texel", 10}, fused_activation_list()));
  return true;
}();

}  // namespace
}  // namespace porta::vk
