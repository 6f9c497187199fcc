// porta cpu kernels — the per-step recurrent product of LSTM: z[0:g] += h[0:k] . rt[0:k, 0:g]
// for one batch entry (contract in rnn_common.hpp).
//
// Why not oneDNN's matmul per step: the product is tiny (1..batch x 4H x H), and a primitive
// call per time step cost more than the arithmetic. Why target_clones: the project builds for
// baseline x86-64, where this loop would run 4 lanes wide; the AVX-512 / AVX2 clones are
// picked at run time (PORTA_CPU_CLONES, target_clones.hpp). Runs of 64 outputs stay in registers
// across the whole k loop, so z is loaded and stored once per run instead of once per k.
#include <algorithm>

#include "kernels/cpu/rnn_common.hpp"
#include "kernels/cpu/target_clones.hpp"

namespace porta::cpu {


namespace {

// Always inlined so that each target clone below compiles it for its own ISA (a called
// helper would be built for baseline x86-64 only).
template <typename T>
__attribute__((always_inline)) inline void accumulate_run(const T* h, const T* rt, T* z, int64_t k, int64_t g,
                                                         int64_t j0, int64_t width) {
  constexpr int64_t kRun = 64;
  if (width == kRun) {
    T acc[kRun];
    std::copy_n(z + j0, kRun, acc);
    for (int64_t i = 0; i < k; ++i) {
      const T hi = h[i], *r = rt + i * g + j0;
#pragma omp simd
      for (int64_t j = 0; j < kRun; ++j) acc[j] += hi * r[j];
    }
    std::copy_n(acc, kRun, z + j0);
    return;
  }
  for (int64_t i = 0; i < k; ++i) {
    const T hi = h[i], *r = rt + i * g + j0;
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) z[j0 + j] += hi * r[j];
  }
}

}  // namespace

PORTA_CPU_CLONES
void accumulate_recurrent(const float* h, const float* rt, float* z, int64_t k, int64_t g) {
  for (int64_t j0 = 0; j0 < g; j0 += 64) accumulate_run(h, rt, z, k, g, j0, std::min<int64_t>(64, g - j0));
}

PORTA_CPU_CLONES
void accumulate_recurrent(const double* h, const double* rt, double* z, int64_t k, int64_t g) {
  for (int64_t j0 = 0; j0 < g; j0 += 64) accumulate_run(h, rt, z, k, g, j0, std::min<int64_t>(64, g - j0));
}

}  // namespace porta::cpu
