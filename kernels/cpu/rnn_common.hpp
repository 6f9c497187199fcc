// porta cpu kernels — what LSTM and GRU share: the input projection, the blocked recurrent
// product, the team of threads that runs the time steps, and the gate helpers.
//
// Both ops first project every time step's input at once (one [seq*batch, input] x
// [input, gates*hidden] product, rnn_gemm.cpp), then run the steps. ONNX stores R as [gates*hidden, hidden];
// the step loop reads it repacked into blocks of kRnnBlock hidden units (RnnPacked below), so
// one block holds every gate's weights for those units and the product of a block is a
// contiguous stream accumulated in registers (rnn_recurrent.cpp). A step's blocks are split
// over the threads of a team that lives for the whole sequence: each thread owns a range of
// hidden units for every batch entry, computes all their gates, and so updates their cell and
// hidden state locally; a barrier per step (per phase: GRU with linear_before_reset 0 needs the
// whole r * h before its candidate product) makes the new h visible to all before the next.
// The hidden state is double-buffered (threads read all of h while writing their units of the
// next one), rows padded to whole blocks so no two threads write one cache line.
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"

namespace porta::cpu {

/// Dot product of two contiguous runs of n values.
template <typename T>
inline T dot(const T* a, const T* b, int64_t n) {
  T acc = 0;
#pragma omp simd reduction(+ : acc)
  for (int64_t k = 0; k < n; ++k) acc += a[k] * b[k];
  return acc;
}

/// c[m, n] = a[m, :] . b[n, :] for row-major a [m, k], b [n, k], c [m, n] (rnn_gemm.cpp).
void gemm_abt(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k);
void gemm_abt(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k);

/// out[m, r] += bias_a[r] + bias_b[r] for m < rows, r < outs (biases optional: nullptr).
template <typename T>
void add_biases(const T* bias_a, const T* bias_b, int64_t rows, int64_t outs, T* out) {
  if (!bias_a && !bias_b) return;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t r = 0; r < outs; ++r) out[m * outs + r] += (bias_a ? bias_a[r] : T(0)) + (bias_b ? bias_b[r] : T(0));
}

/// out[m, r] = x[m, :] . w[r, :] + bias_a[r] + bias_b[r] for m < rows, r < outs (biases
/// optional: nullptr).
template <typename T>
void project(const T* x, const T* w, const T* bias_a, const T* bias_b, int64_t rows, int64_t k, int64_t outs,
             T* out) {
  gemm_abt(x, w, out, rows, outs, k);
  add_biases(bias_a, bias_b, rows, outs, out);
}

/// project() with w = direction d of the call's W (input 1, [dirs, outs, k]); a session-constant
/// W is reordered once for oneDNN and cached (rnn_gemm.cpp).
void project_input(const KernelContext& ctx, int64_t d, const float* x, const float* bias_a, const float* bias_b,
                   int64_t rows, int64_t k, int64_t outs, float* out);
void project_input(const KernelContext& ctx, int64_t d, const double* x, const double* bias_a, const double* bias_b,
                   int64_t rows, int64_t k, int64_t outs, double* out);
/// project_input computing in bf16 with f32 accumulation (a session's `porta_compute` 16):
/// x converted per call, W once per session (or per call when not a constant); out f32.
void project_input_bf16(const KernelContext& ctx, int64_t d, const float* x, const float* bias_a,
                        const float* bias_b, int64_t rows, int64_t k, int64_t outs, float* out);

// ---------------------------------------------------------------------------------------
// Recurrent weights in blocks (rnn_recurrent.cpp)

/// Hidden units per block of the packed recurrent weights: one 64-byte vector of floats.
inline constexpr int64_t kRnnBlock = 16;

/// Array of T aligned to 64 bytes (a cache line; a block row starts on one).
template <typename T>
struct AlignedArray {
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<T[], Free> p;
  int64_t n = 0;
  AlignedArray() = default;
  explicit AlignedArray(int64_t count)
      : p(static_cast<T*>(::operator new[](static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(T),
                                           std::align_val_t(64)))),
        n(count) {
    std::fill_n(p.get(), count, T(0));
  }
  T* data() { return p.get(); }
  const T* data() const { return p.get(); }
};

/// R of every direction ([dirs, gates*hidden, hidden], gate-major rows as ONNX stores it)
/// repacked by blocks: direction d, block b (hidden units 16b .. 16b+15), row k of the
/// product, gate q, unit u at ((d * blocks + b) * hidden + k) * gates * 16 + q * 16 + u. Units
/// past `hidden` in the last block are zero.
/// For bf16 (T = uint16_t: an f32 R rounded to bf16, to nearest even) the rows of a block go
/// in pairs: pair row p holds, per gate q and unit u, R^T's rows 2p and 2p+1 next to each other
/// at p * gates * 32 + q * 32 + 2u + (0 or 1), the operand order of AVX-512 BF16's dot product
/// (an odd hidden size gets a zero row).
template <typename T>
struct RnnPacked {
  int64_t hidden = 0, gates = 0, blocks = 0;
  int64_t rows = 0;  ///< rows of a block: hidden, rounded up to even for bf16
  AlignedArray<T> w;
  /// Block b of direction d: `rows` rows of gates * 16 values.
  const T* block(int64_t d, int64_t b) const { return w.data() + (d * blocks + b) * rows * gates * kRnnBlock; }
};

/// R (input 2 of an LSTM / GRU call with `gates` gates) packed for the step loop. A session
/// constant is packed once and cached keyed on its storage (cached_derived); otherwise it is
/// packed on every call. W is the packed values' type: T itself, or uint16_t for an f32 R
/// rounded to bf16 (to nearest even) for calls that compute in bf16.
template <typename W>
std::shared_ptr<const RnnPacked<W>> packed_recurrent(const KernelContext& ctx, int64_t gates);

/// out[q * out_stride + u] += sum_{i < k} h[i] * w[i * stride + q * 16 + u] for q < nq (1..4),
/// u < 16: one block's product with one batch entry's hidden state, accumulated in registers.
void accumulate_block(const float* h, const float* w, int64_t k, int64_t stride, int nq, float* out,
                      int64_t out_stride);
void accumulate_block(const double* h, const double* w, int64_t k, int64_t stride, int nq, double* out,
                      int64_t out_stride);

/// Whether this CPU has AVX-512 BF16's dot product, which the bf16 recurrent product uses; a
/// bf16 call on a CPU without it computes in f32 (the more accurate answer, as MatMul's).
bool rnn_bf16_supported();

/// The bf16 recurrent product of one block: out[q * out_stride + u] += sum over pair rows
/// p < pairs of h2[p] . w[p * pair_stride + q * 32 + 2u ..+1] for q < nq (1..4), u < 16, with
/// h2[p] the pair (h[2p], h[2p+1]) in bf16 and f32 sums.
void accumulate_block_bf16(const uint32_t* h2, const uint16_t* w, int64_t pairs, int64_t pair_stride, int nq,
                           float* out, int64_t out_stride);

/// h (n floats, n even) as bf16 pairs, rounded to nearest even: n / 2 values.
void to_bf16_pairs(const float* h, int64_t n, uint32_t* h2);


// ---------------------------------------------------------------------------------------
// The step team

/// Multiply-adds of a step's recurrent product each thread of a team must take for the team
/// to beat one thread despite its barriers (default 8192, measured: rnn_recurrent.cpp); 0: no
/// minimum (tests use it to run small shapes on the threaded path). Returns the previous value.
int64_t set_rnn_min_step_macs(int64_t macs);
int64_t rnn_min_step_macs();

/// Threads for a step loop over `blocks` blocks whose recurrent product is `macs` multiply-adds
/// per step: within the call's thread budget (omp_get_max_threads(), set per call by the
/// thread policy), at most one per block, and only as many as the product pays for.
inline int rnn_step_threads(int64_t blocks, int64_t macs) {
  if (omp_in_parallel()) return 1;
  const int64_t min_macs = rnn_min_step_macs();
  int64_t t = std::min<int64_t>(omp_get_max_threads(), blocks);
  if (min_macs > 0) t = std::min(t, macs / min_macs);
  return static_cast<int>(std::max<int64_t>(t, 1));
}

/// First and last (exclusive) block of thread t of nt.
inline std::pair<int64_t, int64_t> rnn_block_range(int64_t blocks, int t, int nt) {
  return {blocks * t / nt, blocks * (t + 1) / nt};
}

/// A barrier for the threads of one team that spins (then yields) instead of entering the
/// OpenMP runtime: libgomp's barrier took 0.3-0.6 µs on two idle cores, this one 0.07-0.17.
/// The last thread to arrive opens the next generation; its writes, and those of every thread
/// before it, are visible to all threads after wait() returns.
class SpinBarrier {
 public:
  explicit SpinBarrier(int threads) : threads_(threads) {}
  void wait() {
    const int64_t gen = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == threads_ - 1) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.store(gen + 1, std::memory_order_release);
      return;
    }
    // Spin a few thousand pauses (tens of µs), then yield the core: a thread that is not
    // running (another process took its core) arrives only after a scheduler slice.
    for (int spins = 0; generation_.load(std::memory_order_acquire) == gen; ++spins) {
      if (spins < 4096) {
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  const int threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<int64_t> generation_{0};
};

/// Runs phase(t, nt, step, p) for every step < steps and phase p < phases on a team of
/// `threads` threads (t = the thread, nt = the team's size, which may be smaller than asked),
/// with a barrier after every phase. An exception thrown by a phase is rethrown here after
/// the team ends (the first one wins; the remaining phases are skipped, every thread still
/// reaches every barrier), since one may not leave an OpenMP region.
template <typename Phase>
void run_steps(int threads, int64_t steps, int phases, Phase&& phase) {
  if (threads <= 1) {
    for (int64_t s = 0; s < steps; ++s)
      for (int p = 0; p < phases; ++p) phase(0, 1, s, p);
    return;
  }
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  std::optional<SpinBarrier> barrier;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#pragma omp single
    barrier.emplace(nt);  // the single's own barrier publishes it to the team
    for (int64_t s = 0; s < steps; ++s)
      for (int p = 0; p < phases; ++p) {
        if (!failed.load(std::memory_order_relaxed)) {
          try {
            phase(t, nt, s, p);
          } catch (...) {
#pragma omp critical(porta_parallel_error)
            if (!error) error = std::current_exception();
            failed.store(true, std::memory_order_relaxed);
          }
        }
        barrier->wait();
      }
  }
  if (error) std::rethrow_exception(error);
}

// ---------------------------------------------------------------------------------------
// Gates

/// p[i] = sigmoid / tanh of p[i] clamped to [-clip, clip] (clip is +inf when the attribute is
/// absent) over n values: vectorized for float (kernels/cpu/custom_vmath.hpp), libm for double.
template <typename T>
inline void clip_run(T* p, int64_t n, double clip) {
  if (std::isinf(clip)) return;
  const T lo = static_cast<T>(-clip), hi = static_cast<T>(clip);
  for (int64_t i = 0; i < n; ++i) p[i] = p[i] < lo ? lo : (p[i] > hi ? hi : p[i]);
}
template <typename T>
inline void sigmoid_run(T* p, int64_t n, double clip) {
  clip_run(p, n, clip);
  if constexpr (std::is_same_v<T, float>) vmath::sigmoid_f32(p, p, n);
  else for (int64_t i = 0; i < n; ++i) p[i] = T(1) / (T(1) + std::exp(-p[i]));
}
template <typename T>
inline void tanh_run(T* p, int64_t n, double clip) {
  clip_run(p, n, clip);
  if constexpr (std::is_same_v<T, float>) vmath::tanh_f32(p, p, n);
  else for (int64_t i = 0; i < n; ++i) p[i] = std::tanh(p[i]);
}

/// Input i of a call as T*, or nullptr when absent.
template <typename T>
const T* optional_input(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? ctx.in(i).data<T>() : nullptr;
}
/// Output i as T*, or nullptr when the node does not produce it.
template <typename T>
T* optional_output(KernelContext& ctx, size_t i) {
  return i < ctx.outputs.size() && ctx.out(i).defined() ? ctx.out(i).data<T>() : nullptr;
}

}  // namespace porta::cpu
