// ScaledDotProductAttention on cpu (f32): fused attention with a streaming ("online") softmax.
//
// Work is split into tasks of (batch*head, block of kQueryBlock queries). A task walks the keys
// in blocks of kKeyBlock: S = scale * Q_blk K_blk^T (oneDNN sgemm), + Mask, then per query row
// the running max m and sum l are updated, the row's accumulator is rescaled by
// exp(m_old - m_new), and P V_blk is added (sgemm). Memory per task is kQueryBlock x
// (kKeyBlock + Dv) floats: no Sq x Skv matrix exists. With causal, key blocks past the task's
// last query are skipped and the keys after each query get probability 0 without an exp.
// Declines D or Dv > 128 (the composite runs).
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_common.hpp"
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
};

// One task: queries [i0, i0 + rows) of head bh.
void attend_block(const Problem& p, int64_t bh, int64_t i0, int64_t rows, std::vector<float>& s,
                  std::vector<float>& acc, std::vector<float>& m, std::vector<float>& l) {
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
        std::fill(srow, srow + cols, 0.f);
        continue;
      }
      float rescale = std::exp(m[r] - m_new);  // 0 when m[r] = -inf
      float sum = vmath::exp_shifted_sum_to_f32(srow, m_new, srow, vis);
      std::fill(srow + vis, srow + cols, 0.f);
      l[r] = l[r] * rescale + sum;
      m[r] = m_new;
      if (rescale != 1.f) vmath::scale_f32(acc.data() + r * p.Dv, rescale, p.Dv);
    }
    sgemm('N', rows, p.Dv, cols, 1.f, s.data(), cols, vp + j0 * p.Dv, p.Dv, 1.f, acc.data(), p.Dv);
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* yrow = p.y + (bh * p.Sq + i0 + r) * p.Dv;
    // A query no key is visible to gives NaN, as softmax over only -inf does.
    float inv = m[r] == ninf ? std::numeric_limits<float>::quiet_NaN() : 1.f / l[r];
    for (int64_t t = 0; t < p.Dv; ++t) yrow[t] = acc[r * p.Dv + t] * inv;
  }
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
  int64_t qb = p.causal ? kCausalQueryBlock : kQueryBlock;
  int64_t blocks = (p.Sq + qb - 1) / qb, heads = p.B * p.H;
  struct Scratch {
    std::vector<float> s, acc, m, l;
  };
  // Tasks are handed out one at a time. Without causal they cost the same, and consecutive
  // tasks share a head (its K and V stay in cache). With causal a query block's work grows
  // with its position, so equal contiguous shares would give one thread all the late blocks
  // when there are few heads (B*H = 1, S 1024: 2.8x the other's work): the longest go first.
  parallel_tasks(
      heads * blocks, [&] { return Scratch{std::vector<float>(qb * kKeyBlock), std::vector<float>(qb * p.Dv),
                                           std::vector<float>(qb), std::vector<float>(qb)}; },
      [&](Scratch& w, int64_t t) {
        int64_t bh = p.causal ? t % heads : t / blocks;
        int64_t i0 = (p.causal ? blocks - 1 - t / heads : t % blocks) * qb;
        attend_block(p, bh, i0, std::min(qb, p.Sq - i0), w.s, w.acc, w.m, w.l);
      });
}

}  // namespace

PORTA_REGISTER_KERNEL(ScaledDotProductAttention, cpu, kF32, sdpa_cpu, sdpa_supports)

}  // namespace porta::cpu
