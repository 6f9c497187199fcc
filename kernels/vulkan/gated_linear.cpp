// GatedLinear (ai.porta) on vulkan, f32 or f16 storage with fp32 accumulation, "texel" (CPU-like
// devices): one texel GEMM (matmul_texel.comp with GLU) where the layer's export runs three
// dispatches (two MatMuls and the Mul). Wg and Wu are interleaved column by column into one
// K x 2F weight (and Bg, Bu into one 2F row), once per session step when they are constants, so
// the gate and the up projection of an output are neighbouring columns of one invocation's
// tile; it writes Act(gate) * up. Products of at most 8 rows decline: the "rows" MatMul streams
// each weight faster there (the op's decomposition runs it), as do GPUs.
#include "kernels/vulkan/movement.hpp"
#include "kernels/vulkan/texel_gemm.hpp"
#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/fused_activation.hpp"

namespace porta::vk {
namespace {

// Inputs `gi` and `ui` ([rows, F] each) side by side as [rows, 2F], column 2j from gi's column
// j and 2j + 1 from ui's (an absent one contributes zeros).
Tensor interleaved(KernelContext& ctx, size_t gi, size_t ui, int64_t rows, int64_t F) {
  const bool has_g = ctx.has_input(gi), has_u = ctx.has_input(ui);
  const DType dtype = ctx.in(has_g ? gi : ui).dtype();
  auto make = [&] {
    Tensor t = Tensor::empty({rows, 2 * F}, dtype, ctx.device);
    if (!has_g || !has_u) run_fill(ctx, t, 0.0);
    for (size_t h = 0; h < 2; ++h) {
      const size_t i = h ? ui : gi;
      if (!ctx.has_input(i)) continue;
      CopyPlan plan;
      plan.axis(rows, F, 2 * F);
      plan.axis(F, 1, 2);
      plan.dst_base = static_cast<int64_t>(h);
      run_copy(ctx, ctx.in(i), t, std::move(plan));
    }
    return t;
  };
  const size_t key = has_g ? gi : ui;
  if ((!has_g || ctx.is_constant_input(gi)) && (!has_u || ctx.is_constant_input(ui)))
    return derive_input(ctx, key, {-2, rows, F, has_g ? 1 : 0, has_u ? 1 : 0}, make);
  return make();
}

TexelGemm glu_gemm(const KernelContext& ctx, int64_t M, int64_t K, int64_t F, bool bias) {
  TexelGemm g = weight_product(M, K, 2 * F, bias);
  g.glu = true;
  // rms_epsilon >= 0: X's rows RMS-normalized (their squares summed as the GEMM streams them).
  const double rms = ctx.attrs->get_float("rms_epsilon", -1.0);
  g.rms = rms >= 0;
  g.rms_eps = g.rms ? rms : 0.0;
  return g;
}

void gated_linear_texel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const int64_t K = x.shape().back(), F = ctx.in(1).dim(1), M = product_rows(x);
  const Tensor w = interleaved(ctx, 1, 2, K, F);
  const bool bias = ctx.has_input(3) || ctx.has_input(4);
  Tensor b;
  if (bias) b = interleaved(ctx, 3, 4, 1, F);
  const opdef::FusedActivation act = opdef::parse_fused_activation(*ctx.attrs, "GatedLinear", "activation");
  Epilogue epi;
  epi.act = static_cast<int32_t>(act.kind);
  epi.alpha = act.alpha, epi.beta = act.beta;
  launch_texel_gemm(ctx, glu_gemm(ctx, M, K, F, bias), x, w, bias ? &b : nullptr, y, epi);
}

std::string gated_linear_texel_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the composite (the tiled MatMul)"); !why.empty()) return why;
  const int64_t K = x.rank() ? x.shape().back() : 0, F = ctx.in(1).rank() == 2 ? ctx.in(1).dim(1) : 0, M = product_rows(x);
  if (auto why = texel_product_rows_ok(M); !why.empty()) return why;
  if (K % 4 || F % 2 || K == 0 || F == 0)
    return str("K ", K, " or 2F ", 2 * F, " is not a positive multiple of 4 (whole texels)");
  if (x.offset() % 4) return "X starts inside a texel";
  if (auto why = texel_gemm_fits(ctx, glu_gemm(ctx, M, K, F, false), x.numel(), 2 * K * F); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(GatedLinear, vulkan, kF32 | kF16, gated_linear_texel, gated_linear_texel_supports,
                      (::porta::KernelImpl{"texel", 10}))

}  // namespace porta::vk
