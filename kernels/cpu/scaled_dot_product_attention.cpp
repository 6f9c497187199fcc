// ScaledDotProductAttention on cpu (f32): fused attention with a streaming ("online") softmax.
//
// Calls with one block of queries and at most 2^20 scores in all (short sequences, windows)
// compute them whole instead (attend_all): one batched product for every head's scores, the
// softmax rows, one batched product for P V. Otherwise work is split into tasks of (batch*head,
// block of kQueryBlock queries). A task walks the keys in blocks of kKeyBlock: S = scale *
// Q_blk K_blk^T (oneDNN sgemm, or register-tiled loops for blocks too small to repay its call),
// + Mask, then per query row the running max m and sum l are updated, the row's accumulator is
// rescaled by exp(m_old - m_new), and P V_blk is added (sgemm, or the loops). Memory per task is kQueryBlock x
// (kKeyBlock + Dv) floats: no Sq x Skv matrix exists. With causal, key blocks past the task's
// last query are skipped and the keys after each query get probability 0 without an exp.
// Declines D or Dv > 128 (the composite runs).
// In bf16 (a session's precision, KernelDef::computes_in): Q, K and V are rounded to bf16 once
// per call, both products run as oneDNN bf16 matmuls with f32 accumulation (the scale applied to
// the f32 scores), the softmax stays in f32 (the precision policy) and writes its probabilities
// straight to bf16 for the second product (an exp as accurate as bf16 keeps, the row sums
// taken over the rounded values). Inputs and output stay f32. Calls small enough for the direct
// loops round Q, K, V and the probabilities to bf16 values and multiply them in f32: products
// of bf16 values are exact there, so the numbers are those of bf16 products with f32 sums.
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/dnn_util.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "kernels/cpu/vector_width.hpp"
#include "kernels/cpu/custom_vmath.hpp"
#include "ops/attention_util.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::cpu {
namespace {

constexpr int64_t kQueryBlock = 128;
// Causal: smaller query blocks waste less of the diagonal key block (the GEMM computes a
// query block's scores against every key up to its last query; half the diagonal tile is
// hidden). 64 was 2-3% faster than 128 on B1 H8 S1024 D64 causal, and slower without causal.
constexpr int64_t kCausalQueryBlock = 64;
constexpr int64_t kKeyBlock = 512;
constexpr int64_t kMaxHeadDim = 128;

// Row-major C = alpha op(A) op(B) + beta C through oneDNN (single-threaded inside our tasks).
void sgemm(char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (k == 0) {  // an empty inner product (head size 0), which oneDNN refuses: C = alpha 0 + beta C
    float product = alpha * 0.0f;  // NaN for the default scale 1/sqrt(0), as the reference and torch
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = product + (beta == 0.0f ? 0.0f : beta * c[i * ldc + j]);
    return;
  }
  dnnl_status_t st = dnnl_sgemm('N', transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success)
    throw BackendError(str("[ScaledDotProductAttention] dnnl_sgemm failed (status ", static_cast<int>(st), ") for ",
                           m, "x", n, "x", k));
}

// Calls whose largest block has at most this many multiply-adds (rows x keys x (D + Dv)) skip
// oneDNN and compute in f32 with the loops below: for short sequences (a 17-token ViT, a
// 16-token encoder) two library calls per block cost more than their arithmetic.
constexpr int64_t kDirectBlockMacs = 64 * 1024;

// Y[r] (+)= sum_t X[r][t] * W[t] for rows r of X (rows x n, row stride ldx) and columns
// [c0, c0 + NV L) of W (n x ldw, zero beyond its columns; L = VB / 4 floats a vector of the
// clone's width, vector_width.hpp): one row of Y in NV registers, so the n multiply-adds per register
// pipeline instead of waiting on a store. Columns [c0, cols) of Y are written (ldy apart);
// `accumulate` adds to them.
template <int VB, int NV>
__attribute__((always_inline)) inline void rows_times_panel(int64_t rows, int64_t n, const float* x, int64_t ldx,
                                                            const float* w, int64_t ldw, float* y, int64_t ldy,
                                                            int64_t c0, int64_t cols, float scale, bool accumulate) {
  using V = typename VecOf<float, VB>::type;
  constexpr int L = VB / 4;
  const int64_t end = std::min<int64_t>(cols, c0 + NV * L);
  for (int64_t r = 0; r < rows; ++r) {
    V acc[NV] = {};
    const float* xr = x + r * ldx;
    for (int64_t t = 0; t < n; ++t) {
      const float a = xr[t];
      for (int j = 0; j < NV; ++j) {
        V b;
        std::memcpy(&b, w + t * ldw + c0 + L * j, VB);
        acc[j] += a * b;
      }
    }
    float out[L * NV];
    for (int j = 0; j < NV; ++j) std::memcpy(out + L * j, &acc[j], VB);
    float* yr = y + r * ldy;
    for (int64_t c = c0; c < end; ++c) yr[c] = (accumulate ? yr[c] : 0.f) + scale * out[c - c0];
  }
}

// small_product at one vector width: column groups of at most 8 vectors (8 sums, a vector of
// W and the broadcast of X in registers: 128 columns with AVX-512, 64 with AVX2).
template <int VB>
__attribute__((always_inline)) inline void small_product_at(int64_t rows, int64_t n, const float* x, int64_t ldx,
                                                            const float* w, int64_t ldw, float* y, int64_t ldy,
                                                            int64_t cols, float scale, bool accumulate) {
  constexpr int L = VB / 4;
  for (int64_t c0 = 0; c0 < cols; c0 += 8 * L) {
    switch (std::min<int64_t>((cols - c0 + L - 1) / L, 8)) {
      case 1: rows_times_panel<VB, 1>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
      case 2: rows_times_panel<VB, 2>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
      case 3: rows_times_panel<VB, 3>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
      case 4: rows_times_panel<VB, 4>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
      case 5: rows_times_panel<VB, 5>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
      case 6: rows_times_panel<VB, 6>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
      case 7: rows_times_panel<VB, 7>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
      default: rows_times_panel<VB, 8>(rows, n, x, ldx, w, ldw, y, ldy, c0, cols, scale, accumulate); break;
    }
  }
}

// Y = scale X W (+ Y) with W's columns padded to a multiple of 16 (at most 128 columns).
PORTA_CPU_CLONES void small_product(int64_t rows, int64_t n, const float* x, int64_t ldx, const float* w, int64_t ldw,
                                    float* y, int64_t ldy, int64_t cols, float scale, bool accumulate) {
  switch (vector_bytes()) {
    case 64: return small_product_at<64>(rows, n, x, ldx, w, ldw, y, ldy, cols, scale, accumulate);
    case 32: return small_product_at<32>(rows, n, x, ldx, w, ldw, y, ldy, cols, scale, accumulate);
    default: return small_product_at<16>(rows, n, x, ldx, w, ldw, y, ldy, cols, scale, accumulate);
  }
}

// Columns of a padded panel: a multiple of 16.
int64_t padded16(int64_t n) { return (n + 15) / 16 * 16; }

// S = scale * Q K^T for a small block: K's block transposed into `panel` (D x cols, columns
// padded to 16 with zeros), then small_product.
void scores_direct(int64_t rows, int64_t cols, int64_t d, float scale, const float* q, const float* k, float* s,
                   float* panel) {
  const int64_t ld = padded16(cols);
  for (int64_t t = 0; t < d; ++t) {
    float* pr = panel + t * ld;
    for (int64_t c = 0; c < cols; ++c) pr[c] = k[c * d + t];
    for (int64_t c = cols; c < ld; ++c) pr[c] = 0.f;
  }
  small_product(rows, d, q, d, panel, ld, s, cols, cols, scale, false);
}

// acc += P V for a small block: V's block copied into `panel` with its rows padded to 16
// columns, then small_product.
void pv_direct(int64_t rows, int64_t cols, int64_t dv, const float* pm, const float* v, float* acc, float* panel) {
  const int64_t ld = padded16(dv);
  for (int64_t c = 0; c < cols; ++c) {
    float* pr = panel + c * ld;
    for (int64_t t = 0; t < dv; ++t) pr[t] = v[c * dv + t];
    for (int64_t t = dv; t < ld; ++t) pr[t] = 0.f;
  }
  small_product(rows, cols, pm, cols, panel, ld, acc, dv, dv, 1.f, true);
}

// The cached oneDNN matmul C = alpha A B (+ C when `accumulate`) for these descriptors, or a
// BackendError naming `what` when oneDNN refuses it.
std::shared_ptr<MaybePrimitive<dnnl::matmul>> matmul_primitive(const std::string& key, const dnnl::memory::desc& ad, const dnnl::memory::desc& bd,
                                     const dnnl::memory::desc& cd, float alpha, bool accumulate, const std::string& what) {
  auto p = cached<MaybePrimitive<dnnl::matmul>>(key, [&] {
    auto r = std::make_shared<MaybePrimitive<dnnl::matmul>>();
    try {
      dnnl::primitive_attr attr;
      if (alpha != 1.f) attr.set_output_scales(0, {alpha});
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.f);
        attr.set_post_ops(ops);
      }
      r->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), attr, engine());
      r->prim = dnnl::matmul(r->pd);
      r->ok = true;
    } catch (const dnnl::error& e) {
      r->why = e.what();
    }
    return r;
  });
  if (!p->ok) throw BackendError(str("[ScaledDotProductAttention] oneDNN refused ", what, " matmul: ", p->why));
  return p;
}

// Row-major C = alpha A op(B) (+ C when `accumulate`) with A and B in bf16 and C in f32:
// a oneDNN matmul over strided memory, one cached primitive per geometry (a call sees at most
// a few: full and last blocks).
void gemm_bf16(bool transb, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
               const uint16_t* b, int64_t ldb, bool accumulate, float* c, int64_t ldc) {
  using dt = dnnl::memory::data_type;
  auto ad = dnnl::memory::desc({m, k}, dt::bf16, dnnl::memory::dims{lda, 1});
  auto bd = transb ? dnnl::memory::desc({k, n}, dt::bf16, dnnl::memory::dims{1, ldb})
                   : dnnl::memory::desc({k, n}, dt::bf16, dnnl::memory::dims{ldb, 1});
  auto cd = dnnl::memory::desc({m, n}, dt::f32, dnnl::memory::dims{ldc, 1});
  const auto p = matmul_primitive(
      dnn_key("sdpa_bf16", m, n, k, lda, ldb, ldc, transb, static_cast<double>(alpha), accumulate), ad, bd, cd, alpha,
      accumulate, str("a bf16 ", m, "x", n, "x", k));
  execute(p->prim, {{DNNL_ARG_SRC, wrap_ptr(ad, a)}, {DNNL_ARG_WEIGHTS, wrap_ptr(bd, b)}, {DNNL_ARG_DST, wrap_ptr(cd, c)}});
}

// Calls whose whole score tensor (B H Sq Skv floats) is at most this large, whose queries fit
// one block and whose blocks are not direct, compute it whole: one batched product for every
// head's scores, the softmax rows, one batched product for P V. Windowed and short-sequence
// attention (swin's 49-token windows: 27 to 192 heads of 49 x 49) then makes two library calls
// per call instead of two per head, as the composite did.
constexpr int64_t kMaterializedScores = 1 << 20;

// C[b] = alpha A[b] op(B[b]) for b < batch, all row-major and dense (A batch x m x k; B batch x
// k x n, or batch x n x k when `transb`; C batch x m x n in f32), A and B in f32 or bf16.
void batched_gemm(bool bf16, bool transb, int64_t batch, int64_t m, int64_t n, int64_t k, float alpha, const void* a,
                  const void* b, float* c) {
  using dt = dnnl::memory::data_type;
  const dt in = bf16 ? dt::bf16 : dt::f32;
  auto ad = dnnl::memory::desc({batch, m, k}, in, dnnl::memory::dims{m * k, k, 1});
  auto bd = transb ? dnnl::memory::desc({batch, k, n}, in, dnnl::memory::dims{n * k, 1, k})
                   : dnnl::memory::desc({batch, k, n}, in, dnnl::memory::dims{k * n, n, 1});
  auto cd = dnnl::memory::desc({batch, m, n}, dt::f32, dnnl::memory::dims{m * n, n, 1});
  const auto p =
      matmul_primitive(dnn_key("sdpa_batched", bf16, transb, batch, m, n, k, static_cast<double>(alpha)), ad, bd, cd,
                       alpha, false, str("a batched ", batch, " x ", m, "x", n, "x", k));
  execute(p->prim, {{DNNL_ARG_SRC, wrap_ptr(ad, a)}, {DNNL_ARG_WEIGHTS, wrap_ptr(bd, b)}, {DNNL_ARG_DST, wrap_ptr(cd, c)}});
}

std::string sdpa_supports(const KernelContext& ctx) {
  return opdef::attention_heads_fit(ctx, kMaxHeadDim, "the fused kernel keeps a query block's accumulators in cache");
}

struct Problem {
  int64_t B, H, Sq, D, Skv, Dv;
  float scale;
  bool causal;
  const float *q, *k, *v, *mask;
  std::vector<int64_t> mask_strides;  // broadcast to B,H,Sq,Skv (0 along broadcast axes)
  float* y;
  // bf16 products: Q, K, V rounded (else null)
  const uint16_t *qh = nullptr, *kh = nullptr, *vh = nullptr;
  bool direct = false;  // small blocks: scores_direct and pv_direct, f32 arithmetic
  // Direct blocks of a bf16 call: q, k and v hold values rounded to bf16, and so do the
  // probabilities before P V (products of bf16 values are exact in f32, so this computes what
  // bf16 products with f32 accumulation do).
  bool round_bf16 = false;
};

// One task: queries [i0, i0 + rows) of head bh.
void attend_block(const Problem& p, int64_t bh, int64_t i0, int64_t rows, std::vector<float>& s,
                  std::vector<float>& acc, std::vector<float>& m, std::vector<float>& l, std::vector<uint16_t>& sh,
                  std::vector<float>& kt) {
  const bool bf16 = p.qh != nullptr, probs_bf16 = bf16 || p.round_bf16;
  const float ninf = -std::numeric_limits<float>::infinity();
  const float* qp = p.q + (bh * p.Sq + i0) * p.D;
  const float* kp = p.k + bh * p.Skv * p.D;
  const float* vp = p.v + bh * p.Skv * p.Dv;
  std::fill(acc.begin(), acc.begin() + rows * p.Dv, 0.f);
  std::fill(m.begin(), m.begin() + rows, ninf);
  std::fill(l.begin(), l.begin() + rows, 0.f);
  int64_t kv_end = p.causal ? std::min(p.Skv, i0 + rows) : p.Skv;
  const float* mask_bh = p.mask ? p.mask + (bh / p.H) * p.mask_strides[0] + (bh % p.H) * p.mask_strides[1] : nullptr;
  for (int64_t j0 = 0; j0 < kv_end; j0 += kKeyBlock) {
    int64_t cols = std::min(kKeyBlock, kv_end - j0);
    if (bf16)
      gemm_bf16(true, rows, cols, p.D, p.scale, p.qh + (bh * p.Sq + i0) * p.D, p.D, p.kh + (bh * p.Skv + j0) * p.D,
                p.D, false, s.data(), cols);
    else if (p.direct)
      scores_direct(rows, cols, p.D, p.scale, qp, kp + j0 * p.D, s.data(), kt.data());
    else
      sgemm('T', rows, cols, p.D, p.scale, qp, p.D, kp + j0 * p.D, p.D, 0.f, s.data(), cols);
    for (int64_t r = 0; r < rows; ++r) {
      float* srow = s.data() + r * cols;
      int64_t i = i0 + r;
      // Causal: only the first `vis` columns of this key block are visible to query i; the rest
      // get probability 0 without paying for their mask or exp (half of every diagonal tile).
      int64_t vis = p.causal ? std::clamp<int64_t>(i + 1 - j0, 0, cols) : cols;
      if (mask_bh) {
        const float* mrow = mask_bh + i * p.mask_strides[2] + j0 * p.mask_strides[3];
        int64_t ms = p.mask_strides[3];
        for (int64_t c = 0; c < vis; ++c) srow[c] += mrow[c * ms];
      }
      float m_new = vis > 0 ? std::max(m[r], vmath::max_f32(srow, vis)) : m[r];
      if (m_new == ninf) {  // every key so far is hidden from this query: nothing to add yet
        if (probs_bf16) std::fill(sh.data() + r * cols, sh.data() + (r + 1) * cols, uint16_t{0});
        else std::fill(srow, srow + cols, 0.f);
        continue;
      }
      float rescale = std::exp(m[r] - m_new);  // 0 when m[r] = -inf
      // bf16 products: the probabilities go straight to bf16 (and the row sum is theirs, so
      // the row the product reads sums to 1); f32: in place.
      float sum = probs_bf16 ? vmath::exp_shifted_sum_to_bf16(srow, m_new, sh.data() + r * cols, vis, cols)
                             : vmath::exp_shifted_sum_to_f32(srow, m_new, srow, vis);
      if (!probs_bf16) std::fill(srow + vis, srow + cols, 0.f);
      l[r] = l[r] * rescale + sum;
      m[r] = m_new;
      if (rescale != 1.f) vmath::scale_f32(acc.data() + r * p.Dv, rescale, p.Dv);
    }
    if (bf16) {
      gemm_bf16(false, rows, p.Dv, cols, 1.f, sh.data(), cols, p.vh + (bh * p.Skv + j0) * p.Dv, p.Dv, true, acc.data(),
                p.Dv);
    } else if (p.direct) {
      if (p.round_bf16) vmath::bf16_to_f32_n(sh.data(), s.data(), rows * cols);
      pv_direct(rows, cols, p.Dv, s.data(), vp + j0 * p.Dv, acc.data(), kt.data());
    } else {
      sgemm('N', rows, p.Dv, cols, 1.f, s.data(), cols, vp + j0 * p.Dv, p.Dv, 1.f, acc.data(), p.Dv);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* yrow = p.y + (bh * p.Sq + i0 + r) * p.Dv;
    // A query no key is visible to gives NaN, as softmax over only -inf does.
    float inv = m[r] == ninf ? std::numeric_limits<float>::quiet_NaN() : 1.f / l[r];
    for (int64_t t = 0; t < p.Dv; ++t) yrow[t] = acc[r * p.Dv + t] * inv;
  }
}

// The whole call at once (kMaterializedScores): S = scale Q K^T for every head, each row's
// softmax (mask, causal, the rounding to bf16 of a bf16 call), Y = P V, each row of Y divided by
// its sum. `s` holds B H Sq Skv floats, `ph` as many bf16 values in a bf16 call.
void attend_all(const Problem& p, bool bf16, std::vector<float>& s, std::vector<uint16_t>& ph, std::vector<float>& inv) {
  const int64_t heads = p.B * p.H, rows = heads * p.Sq;
  const float ninf = -std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  batched_gemm(bf16, true, heads, p.Sq, p.Skv, p.D, p.scale, bf16 ? static_cast<const void*>(p.qh) : p.q,
               bf16 ? static_cast<const void*>(p.kh) : p.k, s.data());
  parallel_for(rows, 64, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t bh = row / p.Sq, i = row % p.Sq;
      float* srow = s.data() + row * p.Skv;
      const int64_t vis = p.causal ? std::min(p.Skv, i + 1) : p.Skv;
      if (p.mask) {
        const float* mrow = p.mask + (bh / p.H) * p.mask_strides[0] + (bh % p.H) * p.mask_strides[1] +
                            i * p.mask_strides[2];
        for (int64_t c = 0; c < vis; ++c) srow[c] += mrow[c * p.mask_strides[3]];
      }
      const float m = vis > 0 ? vmath::max_f32(srow, vis) : ninf;
      if (m == ninf) {  // every key hidden: NaN, as softmax over only -inf gives
        if (bf16) std::fill(ph.data() + row * p.Skv, ph.data() + (row + 1) * p.Skv, uint16_t{0});
        else std::fill(srow, srow + p.Skv, 0.f);
        inv[row] = nan;
        continue;
      }
      const float sum = bf16 ? vmath::exp_shifted_sum_to_bf16(srow, m, ph.data() + row * p.Skv, vis, p.Skv)
                             : vmath::exp_shifted_sum_to_f32(srow, m, srow, vis);
      if (!bf16) std::fill(srow + vis, srow + p.Skv, 0.f);
      inv[row] = 1.f / sum;
    }
  });
  batched_gemm(bf16, false, heads, p.Sq, p.Dv, p.Skv, 1.f, bf16 ? static_cast<const void*>(ph.data()) : s.data(),
               bf16 ? static_cast<const void*>(p.vh) : p.v, p.y);
  parallel_for(rows, 256, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) vmath::scale_f32(p.y + row * p.Dv, inv[row], p.Dv);
  });
}

void sdpa_cpu(KernelContext& ctx) {
  const Shape &qs = ctx.in(0).shape(), &ks = ctx.in(1).shape(), &vs = ctx.in(2).shape();
  Problem p{qs[0], qs[1], qs[2], qs[3], ks[2], vs[3], 0.f, false, nullptr, nullptr, nullptr, nullptr, {}, nullptr};
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  p.y = y.data<float>();
  if (p.Skv == 0) {  // an empty weighted sum
    std::fill(p.y, p.y + y.numel(), 0.f);
    return;
  }
  p.scale = static_cast<float>(ctx.attrs->has("scale") ? ctx.attrs->get_float("scale")
                                                        : 1.0 / std::sqrt(static_cast<double>(p.D)));
  p.causal = ctx.attrs->get_int("causal") != 0;
  p.q = ctx.in(0).data<float>();
  p.k = ctx.in(1).data<float>();
  p.v = ctx.in(2).data<float>();
  if (ctx.has_input(3)) {
    p.mask = ctx.in(3).data<float>();
    p.mask_strides = opdef::attention_mask_strides(ctx);
  }
  // bf16 products (attribute porta_compute, set by a bf16 session); an empty head (D or Dv 0)
  // has no product to round, and a CPU without oneDNN's bf16 matmul computes in f32.
  int64_t qb = p.causal ? kCausalQueryBlock : kQueryBlock;
  p.direct = std::min(qb, p.Sq) * std::min(kKeyBlock, p.Skv) * (p.D + p.Dv) <= kDirectBlockMacs &&
             std::min(kKeyBlock, p.Skv) <= 128;  // small_product writes at most 128 columns
  const bool in_bf16 = ctx.attrs->get_int("porta_compute", 0) == 16 && p.D > 0 && p.Dv > 0;
  const bool bf16 = in_bf16 && !p.direct && onednn_has_bf16();
  // The rounded copies live in the step's state between calls (a session's step sees one
  // shape: no allocation, and no page faults, per call).
  struct Rounded {
    Tensor q, k, v;
    std::vector<float> values;  // direct blocks: Q, K and V rounded to bf16, as f32
    std::vector<uint16_t> bits;  // and their bf16 bits on the way
    // Whole calls (attend_all): every head's scores, the bf16 probabilities, 1 / row sums.
    std::vector<float> scores, inv;
    std::vector<uint16_t> probs;
  };
  if ((bf16 || (in_bf16 && p.direct)) && !ctx.state) ctx.state = std::make_shared<Rounded>();  // only this kernel sets it
  if (in_bf16 && p.direct) {
    auto& rounded = *std::static_pointer_cast<Rounded>(ctx.state);
    const int64_t nq = ctx.in(0).numel(), nk = ctx.in(1).numel(), nv = ctx.in(2).numel();
    rounded.values.resize(static_cast<size_t>(nq + nk + nv));
    std::vector<uint16_t>& bits = rounded.bits;
    bits.resize(static_cast<size_t>(std::max({nq, nk, nv})));
    float* at = rounded.values.data();
    for (const float** src : {&p.q, &p.k, &p.v}) {
      const int64_t n = src == &p.q ? nq : src == &p.k ? nk : nv;
      vmath::f32_to_bf16_n(*src, bits.data(), n);
      vmath::bf16_to_f32_n(bits.data(), at, n);
      *src = at;
      at += n;
    }
    p.round_bf16 = true;
  }
  if (bf16) {
    auto& rounded = *std::static_pointer_cast<Rounded>(ctx.state);
    auto bits = [](const Tensor& t) { return static_cast<const uint16_t*>(t.raw_data()); };
    p.qh = bits(rounded_to_bf16(ctx.in(0), rounded.q));
    p.kh = bits(rounded_to_bf16(ctx.in(1), rounded.k));
    p.vh = bits(rounded_to_bf16(ctx.in(2), rounded.v));
  }
  int64_t blocks = (p.Sq + qb - 1) / qb, heads = p.B * p.H;
  if (!p.direct && blocks == 1 && p.D > 0 && p.Dv > 0 && heads * p.Sq * p.Skv <= kMaterializedScores) {
    if (!ctx.state) ctx.state = std::make_shared<Rounded>();
    auto& st = *std::static_pointer_cast<Rounded>(ctx.state);
    st.scores.resize(static_cast<size_t>(heads * p.Sq * p.Skv));
    st.inv.resize(static_cast<size_t>(heads * p.Sq));
    st.probs.resize(bf16 ? st.scores.size() : 0);
    attend_all(p, bf16, st.scores, st.probs, st.inv);
    return;
  }
  struct Scratch {
    std::vector<float> s, acc, m, l;
    std::vector<uint16_t> sh;  // the probabilities in bf16 (bf16 calls only)
    std::vector<float> kt;     // a padded K or V block (direct blocks only)
  };
  // Tasks are handed out one at a time. Without causal they cost the same, and consecutive
  // tasks share a head (its K and V stay in cache). With causal a query block's work grows
  // with its position, so equal contiguous shares would give one thread all the late blocks
  // when there are few heads (B*H = 1, S 1024: 2.8x the other's work): the longest go first.
  parallel_tasks(
      heads * blocks,
      [&] {
        // Sized for this call's blocks: small heads (a 16-token encoder) must not pay for
        // clearing a full 128 x 512 score block per thread and call.
        const int64_t rows = std::min(qb, p.Sq), cols = std::min(kKeyBlock, p.Skv);
        return Scratch{std::vector<float>(rows * cols), std::vector<float>(rows * p.Dv), std::vector<float>(rows),
                       std::vector<float>(rows), std::vector<uint16_t>(bf16 || p.round_bf16 ? rows * cols : 0),
                       std::vector<float>(p.direct ? std::max(p.D * padded16(cols), cols * padded16(p.Dv)) : 0)};
      },
      [&](Scratch& w, int64_t t) {
        int64_t bh = p.causal ? t % heads : t / blocks;
        int64_t i0 = (p.causal ? blocks - 1 - t / heads : t % blocks) * qb;
        attend_block(p, bh, i0, std::min(qb, p.Sq - i0), w.s, w.acc, w.m, w.l, w.sh, w.kt);
      });
}

}  // namespace

namespace {
const bool sdpa_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "ScaledDotProductAttention";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32;
  k.computes_in = kBF16;  // both products in bf16, the softmax in f32
  k.fn = sdpa_cpu;
  k.supports = sdpa_supports;
  return k;
}());
}  // namespace

}  // namespace porta::cpu
