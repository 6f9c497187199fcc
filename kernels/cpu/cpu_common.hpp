// porta cpu kernels — loops shared by kernels: parallel ranges and broadcast indexing.
#pragma once
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "porta/half.hpp"
#include "porta/op.hpp"
#include "porta/tensor.hpp"

namespace porta::cpu {

/// Runs f(begin, end) over [0, n) split across threads when n is large enough to pay off.
/// An exception thrown by f on any thread is rethrown here after the region (the first one
/// wins); letting it leave an OpenMP region would terminate the process.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  int threads = omp_get_max_threads();
  if (n <= grain || threads <= 1 || omp_in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
  std::exception_ptr error;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    try {
      f(begin, end);
    } catch (...) {
#pragma omp critical(porta_parallel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

/// Runs task(state, i) for every i in [0, n), handing tasks to threads one at a time in order
/// (for tasks of unequal cost: list the longest first). make_state() builds each thread's
/// scratch once. Exceptions as in parallel_for.
template <typename MakeState, typename Task>
void parallel_tasks(int64_t n, MakeState&& make_state, Task&& task) {
  if (n <= 0) return;
  int threads = static_cast<int>(std::min<int64_t>(omp_in_parallel() ? 1 : omp_get_max_threads(), n));
  if (threads <= 1) {
    auto state = make_state();
    for (int64_t i = 0; i < n; ++i) task(state, i);
    return;
  }
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  auto fail = [&] {
#pragma omp critical(porta_parallel_error)
    if (!error) error = std::current_exception();
    failed.store(true, std::memory_order_relaxed);
  };
#pragma omp parallel num_threads(threads)
  {
    std::optional<std::invoke_result_t<MakeState&>> state;
    try {
      state.emplace(make_state());
    } catch (...) {
      fail();
    }
    // Every thread of the team reaches the worksharing loop, even one whose state failed.
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) {
      if (!state || failed.load(std::memory_order_relaxed)) continue;
      try {
        task(*state, i);
      } catch (...) {
        fail();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

/// Strides (in elements) of `t` broadcast to `out_shape` (0 along broadcast axes).
/// Data derived from a session-constant tensor (weights repacked for a kernel's loop, or
/// reordered for a primitive: weights_for): made by `make` on first use, keyed on the tensor's
/// storage, view and `what`, and returned again while that storage lives (weight_cache.cpp).
/// `make` runs outside the cache's lock.
std::shared_ptr<const void> cached_derived(const Tensor& w, const std::string& what,
                                           const std::function<std::shared_ptr<const void>()>& make);

std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& out_shape);

/// A MatMul or Gemm implementation in porta's own f32 loops (gemv, panels): f32 only, with
/// `fused` activations. It declares bf16 inside compute (KernelDef::computes_in) so that the op
/// may compute inside in a bf16 session, and its `supports` declines such calls, which go to
/// the onednn implementation.
KernelDef f32_product_loop(const char* op, KernelImpl impl, KernelFn fn, SupportsFn supports,
                           std::vector<std::string> fused);

/// Whether oneDNN has bf16 products on this CPU (its bf16 matmul and convolution need
/// AVX-512; fixed for the process). Where it has none, a bf16 session's Conv, MatMul and Gemm
/// and the attention kernel's products past its register loops compute in f32.
bool onednn_has_bf16();
/// Whether this CPU has AVX-512 BF16 (vdpbf16ps), the dot product of porta's own bf16 loops
/// (the bf16 panels, the LSTM/GRU recurrent product); false in TSan builds, which take the
/// baseline code only. Fixed for the process.
bool has_avx512_bf16();

/// The format a call computes its products in (KernelDef::computes_in): the attribute
/// `porta_compute` a session with a low precision sets (an ONNX dtype code), f32 without it;
/// InvalidArgument, naming the op, for a code the cpu kernels do not take (only bf16, 16).
DType compute_format(const KernelContext& ctx);

/// A MatMul or Gemm call computing in bf16 inside its kernel (compute_format bf16, f32 in and
/// out): runs `body` on a copy of the call whose A is rounded to bf16 (into a buffer the step
/// keeps) and whose B is too unless it is a session constant (the kernel reorders a constant
/// B once, straight into its primitive's bf16 layout); `body` accumulates in f32 and writes
/// the f32 output with the f32 bias and activation. The copy's prepared state is kept in
/// ctx.state; it declares no held weight (a bf16 copy cannot rebuild an f32 one).
void compute_in_bf16(KernelContext& ctx, void (*body)(KernelContext&));
/// `t` (f32) rounded to bf16 into `keep`, which is reallocated only when the shape changes
/// (a step's buffer kept between calls); returns `keep`.
const Tensor& rounded_to_bf16(const Tensor& t, Tensor& keep);

/// Calls f(out_index, in_offsets...) style iteration for up to 3 inputs broadcast to an
/// output shape; the innermost axis is handed over as a run: f(out_begin, count, offsets,
/// inner_strides). Used by binary/ternary elementwise kernels.
struct BroadcastIter {
  Shape shape;                             // output shape
  std::vector<std::vector<int64_t>> strides;  // per input
  int64_t inner = 1;                       // length of the innermost run
  std::vector<int64_t> inner_stride;       // per input stride along the run
  BroadcastIter(const Shape& out, const std::vector<const Tensor*>& inputs);
  /// Offsets of each input at the start of run `r` (runs are rows of length `inner`).
  void offsets(int64_t r, int64_t* out) const;
  int64_t runs() const;
};

}  // namespace porta::cpu
