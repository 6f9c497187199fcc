// porta cpu kernels — the recurrent product of LSTM and GRU over blocked weights (layout and
// contracts in rnn_common.hpp): R packed by blocks of 16 hidden units, and one block's product
// with a hidden state.
//
// A block row (row k of R^T restricted to the block's units) holds every gate's 16 values next
// to each other, so a block's product streams one contiguous run of weights while its
// gates * 16 sums stay in registers for the whole k loop (a gate's 16 floats are one zmm with
// AVX-512, two ymm with AVX2, four xmm on baseline x86-64); a thread's blocks are one
// contiguous run, which stays in its core's L2 across the steps when the team's share of R
// fits there. Why not oneDNN's matmul per step: the product is tiny (batch x gates*H x H), and
// a primitive call per time step cost more than the arithmetic. Why target_clones: the project
// builds for baseline x86-64, where this loop would run 4 lanes wide; the AVX-512 / AVX2 clones
// are picked at run time (PORTA_CPU_CLONES, target_clones.hpp).
#include <immintrin.h>

#include <atomic>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/rnn_common.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "kernels/cpu/vector_width.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

// The vectors below live inside always-inlined helpers of each clone, so GCC's note that
// passing a 64-byte one out of line on a target without AVX-512 changes the ABI (-Wpsabi) does
// not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace porta::cpu {

namespace {

// Always inlined so that each target clone below compiles it for its own ISA (a called
// helper would be built for baseline x86-64 only). The accumulators are vector values, not
// an array in memory, so they stay in registers across the k loop. About eight sums in flight
// hide the FMA latency: with fewer (zmm sums of four gates or less, GRU's one- and two-gate
// products) the rows are split over kSplit sets of sums (even / odd rows...), added up at the
// end.
template <typename T, int VB, int NQ>
__attribute__((always_inline)) inline void block_product(const T* h, const T* w, int64_t k, int64_t stride, T* out,
                                                         int64_t out_stride) {
  using V = typename VecOf<T, VB>::type;
  constexpr int kLanes = VB / sizeof(T), kPerGate = kRnnBlock / kLanes, kAcc = NQ * kPerGate;
  constexpr int kSplit = kAcc >= 8 ? 1 : 8 / kAcc;
  V acc[kSplit * kAcc];  // acc[s * kAcc + a]: sum a over the rows i = s (mod kSplit)
#pragma GCC unroll 16
  for (int a = 0; a < kAcc; ++a) {
    std::memcpy(&acc[a], out + (a / kPerGate) * out_stride + (a % kPerGate) * kLanes, VB);
#pragma GCC unroll 8
    for (int s = 1; s < kSplit; ++s) acc[s * kAcc + a] = V{};
  }
  int64_t i = 0;
  for (; i + kSplit <= k; i += kSplit)
#pragma GCC unroll 8
    for (int s = 0; s < kSplit; ++s) {
      const T hi = h[i + s], *wi = w + (i + s) * stride;
#pragma GCC unroll 16
      for (int a = 0; a < kAcc; ++a) {
        V wv;
        std::memcpy(&wv, wi + a * kLanes, VB);
        acc[s * kAcc + a] += hi * wv;
      }
    }
  for (; i < k; ++i) {
    const T hi = h[i], *wi = w + i * stride;
#pragma GCC unroll 16
    for (int a = 0; a < kAcc; ++a) {
      V wv;
      std::memcpy(&wv, wi + a * kLanes, VB);
      acc[a] += hi * wv;
    }
  }
#pragma GCC unroll 16
  for (int a = 0; a < kAcc; ++a) {
#pragma GCC unroll 8
    for (int s = 1; s < kSplit; ++s) acc[a] += acc[s * kAcc + a];
    std::memcpy(out + (a / kPerGate) * out_stride + (a % kPerGate) * kLanes, &acc[a], VB);
  }
}

template <typename T, int VB>
__attribute__((always_inline)) inline void block_product_n(const T* h, const T* w, int64_t k, int64_t stride, int nq,
                                                           T* out, int64_t out_stride) {
  switch (nq) {
    case 1: return block_product<T, VB, 1>(h, w, k, stride, out, out_stride);
    case 2: return block_product<T, VB, 2>(h, w, k, stride, out, out_stride);
    case 3: return block_product<T, VB, 3>(h, w, k, stride, out, out_stride);
    default: return block_product<T, VB, 4>(h, w, k, stride, out, out_stride);
  }
}

template <typename T>
__attribute__((always_inline)) inline void block_product_any(const T* h, const T* w, int64_t k, int64_t stride,
                                                             int nq, T* out, int64_t out_stride) {
  switch (vector_bytes()) {
    case 64: return block_product_n<T, 64>(h, w, k, stride, nq, out, out_stride);
    case 32: return block_product_n<T, 32>(h, w, k, stride, nq, out, out_stride);
    default: return block_product_n<T, 16>(h, w, k, stride, nq, out, out_stride);
  }
}

// Measured on two idle cores (AMD EPYC Zen 4 under KVM, AVX-512), 256 steps, batch 1: LSTM at
// hidden 32 (4096 multiply-adds a step) was slower on two threads than on one, at 48 (9216)
// as fast, at 64 (16384) 25% faster; GRU with linear_before_reset 0 (two barriers a step) at
// 64 (12288) as fast. So a thread takes at least 8192.
std::atomic<int64_t> g_min_step_macs{8192};

// R's value as the packed type: itself, or f32 rounded to bf16 (to nearest even; NaN stays NaN).
inline float packed_value(float v, float) { return v; }
inline double packed_value(double v, double) { return v; }
inline uint16_t packed_value(float v, uint16_t) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// Block b of one direction's R ([gates*hidden, hidden]) into `out` (that block's place): row k,
// gate q, unit u at k * gates * 16 + q * 16 + u, or for bf16 in pairs of rows (RnnPacked).
template <typename T, typename W>
void pack_block(const T* r, int64_t hidden, int64_t gates, int64_t b, W* out) {
  constexpr bool pairs = std::is_same_v<W, uint16_t>;
  const int64_t row = gates * kRnnBlock;
  for (int64_t q = 0; q < gates; ++q)
    for (int64_t u = 0; u < kRnnBlock && b * kRnnBlock + u < hidden; ++u) {
      const T* src = r + (q * hidden + b * kRnnBlock + u) * hidden;  // R's row of gate q, unit 16b+u
      for (int64_t k = 0; k < hidden; ++k) {
        const int64_t at = pairs ? (k / 2) * 2 * row + q * 2 * kRnnBlock + 2 * u + (k & 1) : k * row + q * kRnnBlock + u;
        out[at] = packed_value(src[k], W{});
      }
    }
}

template <typename T, typename W>
std::shared_ptr<const RnnPacked<W>> pack_all(const Tensor& r_tensor, int64_t gates) {
  const int64_t dirs = r_tensor.dim(0), hidden = r_tensor.dim(2);
  auto p = std::make_shared<RnnPacked<W>>();
  p->hidden = hidden;
  p->gates = gates;
  p->blocks = (hidden + kRnnBlock - 1) / kRnnBlock;
  p->rows = std::is_same_v<W, uint16_t> ? (hidden + 1) / 2 * 2 : hidden;
  p->w = AlignedArray<W>(dirs * p->blocks * p->rows * gates * kRnnBlock);
  const T* r = r_tensor.data<T>();
  W* w = p->w.data();
  const int64_t blocks = p->blocks, rows = p->rows;
  parallel_for(dirs * blocks, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      int64_t d = i / blocks, b = i % blocks;
      pack_block(r + d * gates * hidden * hidden, hidden, gates, b, w + (d * blocks + b) * rows * gates * kRnnBlock);
    }
  });
  return p;
}

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
// AVX-512 BF16: per pair row one dot product per gate (16 units x 2 rows), the pair of h
// broadcast; two sets of sums (even and odd pair rows) keep 8 in flight for 4 gates.
template <int NQ>
__attribute__((target("avx512f,avx512bf16"), always_inline)) inline void bf16_block(
    const uint32_t* h2, const uint16_t* w, int64_t pairs, int64_t pair_stride, float* out, int64_t out_stride) {
  __m512 acc[2][NQ];
  for (int q = 0; q < NQ; ++q) {
    acc[0][q] = _mm512_loadu_ps(out + q * out_stride);
    acc[1][q] = _mm512_setzero_ps();
  }
  int64_t p = 0;
  for (; p + 2 <= pairs; p += 2)
    for (int s = 0; s < 2; ++s) {
      const __m512bh hv = (__m512bh)_mm512_set1_epi32(static_cast<int>(h2[p + s]));
      const uint16_t* wp = w + (p + s) * pair_stride;
      for (int q = 0; q < NQ; ++q)
        acc[s][q] = _mm512_dpbf16_ps(acc[s][q], hv, (__m512bh)_mm512_loadu_si512(wp + q * 32));
    }
  for (; p < pairs; ++p) {
    const __m512bh hv = (__m512bh)_mm512_set1_epi32(static_cast<int>(h2[p]));
    for (int q = 0; q < NQ; ++q)
      acc[0][q] = _mm512_dpbf16_ps(acc[0][q], hv, (__m512bh)_mm512_loadu_si512(w + p * pair_stride + q * 32));
  }
  for (int q = 0; q < NQ; ++q) _mm512_storeu_ps(out + q * out_stride, _mm512_add_ps(acc[0][q], acc[1][q]));
}

__attribute__((target("avx512f,avx512bf16"))) void bf16_block_n(const uint32_t* h2, const uint16_t* w, int64_t pairs,
                                                               int64_t pair_stride, int nq, float* out,
                                                               int64_t out_stride) {
  switch (nq) {
    case 1: return bf16_block<1>(h2, w, pairs, pair_stride, out, out_stride);
    case 2: return bf16_block<2>(h2, w, pairs, pair_stride, out, out_stride);
    case 3: return bf16_block<3>(h2, w, pairs, pair_stride, out, out_stride);
    default: return bf16_block<4>(h2, w, pairs, pair_stride, out, out_stride);
  }
}
#endif

}  // namespace

PORTA_CPU_CLONES
void accumulate_block(const float* h, const float* w, int64_t k, int64_t stride, int nq, float* out,
                      int64_t out_stride) {
  block_product_any(h, w, k, stride, nq, out, out_stride);
}

PORTA_CPU_CLONES
void accumulate_block(const double* h, const double* w, int64_t k, int64_t stride, int nq, double* out,
                      int64_t out_stride) {
  block_product_any(h, w, k, stride, nq, out, out_stride);
}

void accumulate_block_bf16(const uint32_t* h2, const uint16_t* w, int64_t pairs, int64_t pair_stride, int nq,
                           float* out, int64_t out_stride) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  bf16_block_n(h2, w, pairs, pair_stride, nq, out, out_stride);
#else
  (void)h2, (void)w, (void)pairs, (void)pair_stride, (void)nq, (void)out, (void)out_stride;
  throw BackendError("[RNN] the bf16 recurrent product needs AVX-512 BF16");
#endif
}

bool rnn_bf16_supported() { return has_avx512_bf16(); }

void to_bf16_pairs(const float* h, int64_t n, uint32_t* h2) {
  for (int64_t i = 0; i + 1 < n; i += 2)
    h2[i / 2] = static_cast<uint32_t>(packed_value(h[i], uint16_t{})) |
                (static_cast<uint32_t>(packed_value(h[i + 1], uint16_t{})) << 16);
}

template <typename W>
std::shared_ptr<const RnnPacked<W>> packed_recurrent(const KernelContext& ctx, int64_t gates) {
  using T = std::conditional_t<std::is_same_v<W, uint16_t>, float, W>;  // R's own type
  const Tensor& r = ctx.in(2);
  if (!ctx.is_constant_input(2)) return pack_all<T, W>(r, gates);
  std::string what = str("rnn-blocks:", dtype_name(r.dtype()), std::is_same_v<W, uint16_t> ? ":bf16-pairs:" : ":",
                         gates, ":", kRnnBlock);
  return std::static_pointer_cast<const RnnPacked<W>>(
      cached_derived(r, what, [&] { return std::static_pointer_cast<const void>(pack_all<T, W>(r, gates)); }));
}
template std::shared_ptr<const RnnPacked<float>> packed_recurrent<float>(const KernelContext&, int64_t);
template std::shared_ptr<const RnnPacked<double>> packed_recurrent<double>(const KernelContext&, int64_t);
template std::shared_ptr<const RnnPacked<uint16_t>> packed_recurrent<uint16_t>(const KernelContext&, int64_t);

int64_t set_rnn_min_step_macs(int64_t macs) { return g_min_step_macs.exchange(macs); }
int64_t rnn_min_step_macs() { return g_min_step_macs.load(std::memory_order_relaxed); }

}  // namespace porta::cpu
