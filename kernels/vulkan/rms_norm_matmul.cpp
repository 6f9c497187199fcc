// RmsNormMatMul (ai.porta) on vulkan, f32 or f16 storage with fp32 accumulation, "texel"
// (CPU-like devices): one texel GEMM (matmul_texel.comp with RMS) where RmsNorm and MatMul ran
// two dispatches. Each invocation streams whole rows of X over K for its products, so it sums
// their squares on the way and scales its results by 1 / sqrt(mean + epsilon) at the end; the
// norm's Scale is already in W's rows. Products of at most 8 rows decline (the "rows" MatMul
// streams each weight faster there; the op's decomposition runs it), as do GPUs, K or N no
// multiple of 4 and X starting inside a texel.
#include "kernels/vulkan/texel_gemm.hpp"
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

TexelGemm rms_gemm(const KernelContext& ctx, int64_t M, int64_t K, int64_t N, bool bias) {
  TexelGemm g = weight_product(M, K, N, bias);
  g.rms = true;
  g.rms_eps = ctx.attrs->get_float("epsilon");
  return g;
}

void rms_norm_matmul_texel(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const int64_t K = x.shape().back(), N = ctx.in(1).dim(1), M = product_rows(x);
  const bool bias = ctx.has_input(2);
  launch_texel_gemm(ctx, rms_gemm(ctx, M, K, N, bias), x, ctx.in(1), bias ? &ctx.in(2) : nullptr, y, Epilogue{});
}

std::string rms_norm_matmul_texel_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the composite (RmsNorm's and MatMul's kernels)"); !why.empty())
    return why;
  const Tensor& w = ctx.in(1);
  const int64_t K = x.rank() ? x.shape().back() : 0, N = w.rank() == 2 ? w.dim(1) : 0, M = product_rows(x);
  if (auto why = texel_product_rows_ok(M); !why.empty()) return why;
  if (K % 4 || N % 4 || K == 0 || N == 0)
    return str("K ", K, " or N ", N, " is not a positive multiple of 4 (whole texels)");
  if (x.offset() % 4 || w.offset() % 4) return "X or W starts inside a texel";
  if (auto why = texel_gemm_fits(ctx, rms_gemm(ctx, M, K, N, false), x.numel(), w.numel()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(RmsNormMatMul, vulkan, kF32 | kF16, rms_norm_matmul_texel, rms_norm_matmul_texel_supports,
                      (::porta::KernelImpl{"texel", 10}))

}  // namespace porta::vk
