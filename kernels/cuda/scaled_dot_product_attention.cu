// porta gpu kernels — ScaledDotProductAttention (ai.porta), fused, with a streaming ("online")
// softmax: no Sq x Skv matrix exists in device memory. CUDA and HIP.
//
// A block of 256 threads owns kQueryBlock = 16 queries of one (batch, head) and walks the keys
// in tiles of kKeyBlock = 16 staged in shared memory. Each thread computes one score
// s[r][j] = scale * q_r . k_j (+ Mask; -inf where causal hides the key); one thread per query
// row updates the running max m and sum l and the factor exp(m_old - m_new) that rescales the
// accumulators; every thread then adds P V to its accumulators (row t / 16, columns
// t % 16 + 16 c). Arithmetic is float for every storage type. D and Dv are at most 128
// (declined above: the composite runs). No warp-level operations, so any warp size works.
#include <algorithm>
#include <cmath>

#include "kernels/cuda/gpu_kernel.hpp"
#include "kernels/cuda/shared_memory.cuh"
#include "ops/attention_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

constexpr int kThreads = 256;
constexpr int kQueryBlock = 16, kKeyBlock = 16, kMaxHeadDim = 128;
constexpr int kColsPerThread = kMaxHeadDim / 16;

struct AttentionShape {
  int64_t H, Sq, Skv, D, Dv, q_blocks;
  float scale;
  int64_t mask_stride[4];  // Mask broadcast to [B, H, Sq, Skv]: element strides, 0 when broadcast
};

template <typename T, bool Causal>
__global__ void __launch_bounds__(kThreads)
    attention_kernel(const T* q, const T* k, const T* v, const T* mask, T* y, AttentionShape p) {
  PORTA_SHARED(float, q_tile, [kQueryBlock * kMaxHeadDim]);
  PORTA_SHARED(float, k_tile, [kKeyBlock * kMaxHeadDim]);
  PORTA_SHARED(float, v_tile, [kKeyBlock * kMaxHeadDim]);
  PORTA_SHARED(float, scores, [kQueryBlock * kKeyBlock]);
  PORTA_SHARED(float, row_max, [kQueryBlock]);
  PORTA_SHARED(float, row_sum, [kQueryBlock]);
  PORTA_SHARED(float, row_rescale, [kQueryBlock]);

  const int64_t bh = blockIdx.x / p.q_blocks, i0 = (blockIdx.x % p.q_blocks) * kQueryBlock;
  const int64_t b = bh / p.H, h = bh % p.H;
  const int t = threadIdx.x, my_row = t / 16, my_col = t % 16;
  const int my_cols = my_col < p.Dv ? static_cast<int>((p.Dv - my_col + 15) / 16) : 0;  // columns below Dv

  for (int64_t e = t; e < kQueryBlock * p.D; e += kThreads) {
    int64_t r = e / p.D, d = e % p.D;
    q_tile[r * kMaxHeadDim + d] = i0 + r < p.Sq ? load_acc<T>(q[(bh * p.Sq + i0 + r) * p.D + d]) : 0.f;
  }
  if (t < kQueryBlock) {
    row_max[t] = -INFINITY;
    row_sum[t] = 0.f;
  }
  float acc[kColsPerThread];
  for (int c = 0; c < kColsPerThread; ++c) acc[c] = 0.f;

  const int64_t kv_end = Causal && i0 + kQueryBlock < p.Skv ? i0 + kQueryBlock : p.Skv;
  for (int64_t j0 = 0; j0 < kv_end; j0 += kKeyBlock) {
    __syncthreads();  // the previous tile's readers are done
    for (int64_t e = t; e < kKeyBlock * p.D; e += kThreads) {
      int64_t j = e / p.D, d = e % p.D;
      k_tile[j * kMaxHeadDim + d] = j0 + j < p.Skv ? load_acc<T>(k[(bh * p.Skv + j0 + j) * p.D + d]) : 0.f;
    }
    for (int64_t e = t; e < kKeyBlock * p.Dv; e += kThreads) {
      int64_t j = e / p.Dv, d = e % p.Dv;
      v_tile[j * kMaxHeadDim + d] = j0 + j < p.Skv ? load_acc<T>(v[(bh * p.Skv + j0 + j) * p.Dv + d]) : 0.f;
    }
    __syncthreads();
    {
      const int64_t i = i0 + my_row, key = j0 + my_col;
      float s = -INFINITY;
      if (i < p.Sq && key < p.Skv && (!Causal || key <= i)) {
        float dot = 0.f;
        for (int64_t d = 0; d < p.D; ++d) dot += q_tile[my_row * kMaxHeadDim + d] * k_tile[my_col * kMaxHeadDim + d];
        s = dot * p.scale;
        if (mask)
          s += load_acc<T>(mask[b * p.mask_stride[0] + h * p.mask_stride[1] + i * p.mask_stride[2] +
                                key * p.mask_stride[3]]);
      }
      scores[my_row * kKeyBlock + my_col] = s;
    }
    __syncthreads();
    if (t < kQueryBlock) {
      float* row = scores + t * kKeyBlock;
      const float m_old = row_max[t];
      float m_new = m_old;
      for (int j = 0; j < kKeyBlock; ++j) m_new = fmaxf(m_new, row[j]);
      float rescale = 1.f, sum = 0.f;
      if (m_new != -INFINITY) {
        rescale = m_old == -INFINITY ? 0.f : expf(m_old - m_new);
        for (int j = 0; j < kKeyBlock; ++j) {
          float e = row[j] == -INFINITY ? 0.f : expf(row[j] - m_new);
          row[j] = e;
          sum += e;
        }
      } else {
        for (int j = 0; j < kKeyBlock; ++j) row[j] = 0.f;  // every key so far is hidden
      }
      row_max[t] = m_new;
      row_sum[t] = row_sum[t] * rescale + sum;
      row_rescale[t] = rescale;
    }
    __syncthreads();
    // Each probability is read once and applied to all of this thread's columns.
    const float rescale = row_rescale[my_row];
#pragma unroll
    for (int c = 0; c < kColsPerThread; ++c) acc[c] *= rescale;
    for (int j = 0; j < kKeyBlock; ++j) {
      const float pj = scores[my_row * kKeyBlock + j];
#pragma unroll
      for (int c = 0; c < kColsPerThread; ++c)
        if (c < my_cols) acc[c] += pj * v_tile[j * kMaxHeadDim + my_col + 16 * c];
    }
  }
  __syncthreads();
  const int64_t i = i0 + my_row;
  if (i >= p.Sq) return;
  // Skv = 0: an empty weighted sum (0). A query every key is hidden from: NaN, as the softmax
  // of a row of -inf gives.
  const float m = row_max[my_row], l = row_sum[my_row];
  const float inv = p.Skv == 0 ? 0.f : (m == -INFINITY ? NAN : 1.f / l);
#pragma unroll
  for (int c = 0; c < kColsPerThread; ++c) {
    const int64_t col = my_col + 16 * c;
    if (col < p.Dv) y[(bh * p.Sq + i) * p.Dv + col] = store_acc<T>(p.Skv == 0 ? 0.f : acc[c] * inv);
  }
}

void sdpa_gpu(KernelContext& ctx) {
  const Shape &qs = ctx.in(0).shape(), &ks = ctx.in(1).shape(), &vs = ctx.in(2).shape();
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  AttentionShape p{qs[1], qs[2], ks[2], qs[3], vs[3], 0, 0.f, {0, 0, 0, 0}};
  p.q_blocks = (p.Sq + kQueryBlock - 1) / kQueryBlock;
  p.scale = static_cast<float>(ctx.attrs->has("scale") ? ctx.attrs->get_float("scale")
                                                        : 1.0 / std::sqrt(static_cast<double>(p.D)));
  const bool has_mask = ctx.has_input(3);
  const std::vector<int64_t> mask_stride = opdef::attention_mask_strides(ctx);
  std::copy(mask_stride.begin(), mask_stride.end(), p.mask_stride);
  const int64_t blocks = qs[0] * qs[1] * p.q_blocks;
  if (blocks > 0x7fffffff)
    throw Unsupported(str("[ScaledDotProductAttention] ", blocks, " blocks exceed the grid's x dimension"));
  const bool causal = ctx.attrs->get_int("causal") != 0;
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kF32 | kF16 | kBF16>(y.dtype(), "ScaledDotProductAttention", [&](auto tag) {
    using T = decltype(tag);
    const T *pq = device_ptr<const T>(ctx.in(0)), *pk = device_ptr<const T>(ctx.in(1)),
            *pv = device_ptr<const T>(ctx.in(2)), *pm = has_mask ? device_ptr<const T>(ctx.in(3)) : nullptr;
    T* py = device_ptr<T>(y);
    auto grid = static_cast<unsigned>(blocks);
    if (causal) launch<attention_kernel<T, true>>(grid, kThreads, 0, stream(device), pq, pk, pv, pm, py, p);
    else launch<attention_kernel<T, false>>(grid, kThreads, 0, stream(device), pq, pk, pv, pm, py, p);
    PORTA_GPU_CHECK_LAUNCH(device, "attention_kernel");
  });
}

std::string sdpa_supports(const KernelContext& ctx) {
  return opdef::attention_heads_fit(ctx, kMaxHeadDim,
                                    "the fused kernel stages Q, K and V tiles of up to 128 columns in shared memory");
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IF(ScaledDotProductAttention, kF32 | kF16 | kBF16, sdpa_gpu, sdpa_supports)

}  // namespace porta::PORTA_GPU_NS
