// porta vulkan kernels — the barrier-free GEMM of CPU-like devices (matmul_texel.comp), shared
// by MatMul/Gemm (matmul.cpp) and Conv's im2col path (conv.cpp).
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {

/// PreActConv's map of a pointwise conv's input channels before the product (the texel GEMM's
/// B, the "rows" product's A with a_t): Act(v * scale[c] + shift[c]), scale and shift [C] bound
/// as vec4 texels (C a multiple of 4), `act` ops/fused_activation.hpp's kind. None without scale.
struct ChannelMap {
  const Tensor* scale = nullptr;
  const Tensor* shift = nullptr;
  int32_t act = 0;
  double alpha = 0, beta = 0;
};

/// Y[b] = alpha * A[b] x B[b] + beta * C for every batch b (z of the grid). A is (M, K) row-major; B is (K, N) with rows `ldb` texels apart, or
/// (N, K) when `b_t`. K is a multiple of 4, as is N when B is (K, N) unless ldb covers the
/// padding. `offsets` holds (a, b, c, y) element offsets per batch; a and b multiples of 4.
struct TexelGemm {
  int64_t M = 0, N = 0, K = 0, ldb = 0;
  bool b_t = false;
  /// B (K, N) read one element per texel: rows `ldb` elements apart, its offsets in elements
  /// (any), N any (matmul_texel.comp's B_SCALAR).
  bool b_scalar = false;
  /// B's columns in (gate, up) pairs and Y of N / 2 columns, Act(gate) * up (matmul_texel.comp's
  /// GLU; GatedLinear): N a multiple of 8 keeps every invocation's 4 outputs inside a row.
  bool glu = false;
  /// Each row of A scaled by 1 / sqrt(mean of its squares + rms_eps) in Y, before C
  /// (matmul_texel.comp's RMS; RmsNormMatMul): B (K, N) only, K counting A's real elements.
  bool rms = false;
  double rms_eps = 0;
  /// B (K, N)'s rows mapped first (matmul_texel.comp's PRE): K counts channels of one image.
  ChannelMap pre;
  double alpha = 1, beta = 0;
  int64_t scm = 0, scn = 0;
  std::vector<int32_t> offsets{0, 0, 0, 0};
  int64_t batches() const { return static_cast<int64_t>(offsets.size() / 4); }
};

/// X [M, K] (row-major, whole texels) times a weight B (K, N), plus a bias row of N where `bias`
/// (C at n, scm 0): the products of the fused ops built on the texel GEMM.
inline TexelGemm weight_product(int64_t M, int64_t K, int64_t N, bool bias) {
  TexelGemm g;
  g.M = M, g.N = N, g.K = K, g.ldb = N / 4;
  g.alpha = 1, g.beta = bias ? 1 : 0, g.scm = 0, g.scn = 1;
  return g;
}

/// "" when `g` fits the device (grid, batches, texel counts of A and B, the loop cap); else
/// the reason. `a_numel`/`b_numel` are the operands' element counts. `operands_only`: only
/// the texel counts (a kernel that cuts the work its own way).
std::string texel_gemm_fits(const KernelContext& ctx, const TexelGemm& g, int64_t a_numel, int64_t b_numel,
                            bool operands_only = false);
/// A zero-padded copy of `src` viewed as `blocks` row-major (rows x cols) matrices, each
/// widened to (dst_rows x dst_cols) (pack.comp; dst_cols a multiple of 4): operands whose rows
/// are not whole texels.
Tensor pack_blocks(const KernelContext& ctx, const Tensor& src, int64_t blocks, int64_t rows, int64_t cols,
                   int64_t dst_rows, int64_t dst_cols);
/// What one call site of the texel GEMM keeps between runs (KernelContext::state: a session
/// step's lives as long as its plan; an eager call starts with none): the zero-padded copies
/// of its constant operands and the device copies of its offset tables, each keyed by what it
/// was made from. A session's run then records the GEMM alone (and the copies of operands that
/// change from run to run).
struct TexelGemmState {
  struct Packed {
    const void* storage = nullptr;
    int64_t offset = 0;
    Shape shape;
    std::array<int64_t, 5> geometry{};  // e.g. pack_blocks' blocks, rows, cols, dst_rows, dst_cols
    Tensor padded;
  };
  std::vector<Packed> packed;
  std::vector<std::pair<std::vector<int32_t>, Tensor>> tables;
};
/// The call site's TexelGemmState (made in ctx.state on first use). Only the kernels using
/// the texel GEMM (MatMul/Gemm "texel", Conv "im2col") keep it there.
TexelGemmState& texel_state(KernelContext& ctx);
/// A device tensor `make` derives from input `i` (a padded or transposed copy), made once and
/// kept in the state when the input is a session constant; `geometry` tells apart the copies
/// one call site derives from one input.
Tensor derive_input(KernelContext& ctx, size_t i, const std::array<int64_t, 5>& geometry,
                    const std::function<Tensor()>& make);
/// pack_blocks of input `i`, made once and kept in the state when the input is a session
/// constant (weights whose K is not a multiple of 4).
Tensor pack_input(KernelContext& ctx, size_t i, int64_t blocks, int64_t rows, int64_t cols, int64_t dst_rows,
                  int64_t dst_cols);
/// W for the "rows" product: input `i` (N x K, or K x N without `b_t`) in the layout
/// matmul_rows.comp streams (pack_rows.comp), made once and kept in the state when it is a
/// session constant; or, for a large W stored (N, K) with K a multiple of 4 and A not `a_t`, W
/// itself (a packed copy would double the device memory such weights take).
/// `rows`: of the product per image (the packing suits them).
struct RowsWeight {
  Tensor w;
  bool packed = true;
  int64_t rb = 4;  // rows of W per invocation
};
RowsWeight rows_weight(KernelContext& ctx, size_t i, int64_t N, int64_t K, bool b_t, bool a_t, int64_t rows);
/// The "rows" product (matmul_rows.comp), shared by Gemm and the Convs that are one (conv.cpp):
///   Y[y_base + image * y_img + m * ym + n * yn] = Act(alpha * sum_k A(m, k) W(n, k)
///                                                     + beta * C[m * scm + n * scn] + R)
/// for `rows` rows m of the product per image and the N rows n of W, K padded to Kp (a multiple
/// of 4: A and W zero there). A is (rows, Kp) row-major, or with `a_t` stored (Kp, lda texels),
/// the product's rows its columns (a Conv's columns); images lie a_img texels apart in A.
/// W comes from rows_weight. C may be null; R is `epi`'s residual, indexed as Y.
struct RowsGemm {
  int64_t N = 0, Kp = 0, rows = 0;
  bool a_t = false;
  /// With a_t: A read one element per texel, lda and a_img in elements (columns starting
  /// anywhere: matmul_rows.comp's A_SCALAR).
  bool a_scalar = false;
  int64_t lda = 0;
  int64_t images = 1, a_img = 0;
  int64_t y_base = 0, y_img = 0, ym = 0, yn = 1;
  int64_t scm = 0, scn = 0;
  double alpha = 1, beta = 1;
  /// With a_t: A's K rows (channels) mapped first (matmul_rows.comp's PRE).
  ChannelMap pre;
};
void launch_rows_gemm(KernelContext& ctx, const RowsGemm& g, const Tensor& a, const RowsWeight& w, const Tensor* c,
                      Tensor& y, const Epilogue& epi);
/// "" when the device runs the "rows" product over W (input `w_input`, N x K; b_t and a_t as
/// for rows_weight) and `images` x `rows` rows of the product (texel counts of W and its
/// packed copy, one packed block per binding, the driver's loop cap, the grid); else the reason.
std::string rows_gemm_ok(const KernelContext& ctx, size_t w_input, int64_t N, int64_t K, bool b_t, bool a_t,
                         int64_t images, int64_t rows);
/// Rows of the product the "rows" kernel takes per image (positions of a conv over a small
/// map, a Linear layer's rows): each invocation holds them all, so W is read once per image
/// (16 in one pass against two passes of 8: squeezenet1_1 on vulkan:0 5.69 -> 4.97 ms).
inline constexpr int64_t kRowsMax = 16;
/// Rows of A the "rows" MatMul takes (a Linear layer at batch 1-8): up to there it streams
/// each weight faster than the texel GEMM, so the fused products built on the texel GEMM
/// (GatedLinear, RmsNormMatMul) decline them and their decompositions run it.
inline constexpr int64_t kRowsMaxM = 8;
/// Rows of a product over X's last axis ([..., K]: the product of the leading axes).
inline int64_t product_rows(const Tensor& x) { return x.shape().back() ? x.numel() / x.shape().back() : 0; }
/// "" when a fused product on the texel GEMM takes `rows` rows; else why not.
inline std::string texel_product_rows_ok(int64_t rows) {
  return rows <= kRowsMaxM ? str(rows, " rows of X (the \"rows\" MatMul streams each weight faster up to ", kRowsMaxM, ")")
                           : "";
}
/// Records the dispatch (nothing when Y is empty). `c` may be null; `epi` is Conv's fused
/// residual and activation (matmul_texel.comp applies it where it writes Y).
void launch_texel_gemm(KernelContext& ctx, const TexelGemm& g, const Tensor& a, const Tensor& b, const Tensor* c,
                       Tensor& y, const Epilogue& epi = {});

}  // namespace porta::vk
