// porta cpu kernels — loops shared by kernels: parallel ranges and broadcast indexing.
#pragma once
#include <omp.h>

#include <cstdint>
#include <vector>

#include "porta/half.hpp"
#include "porta/op.hpp"
#include "porta/tensor.hpp"

namespace porta::cpu {

/// Runs f(begin, end) over [0, n) split across threads when n is large enough to pay off.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  int threads = omp_get_max_threads();
  if (n <= grain || threads <= 1 || omp_in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    f(begin, end);
  }
}

/// Strides (in elements) of `t` broadcast to `out_shape` (0 along broadcast axes).
std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& out_shape);

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
