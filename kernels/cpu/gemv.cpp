// Few-row products streaming B (gemv.hpp). Two loops, one per layout of B:
// - B n x k (a Linear weight): each output is a dot product of a row of A with a row of B;
//   four rows of B go through registers together, against up to four rows of A.
// - B k x n: rows of y accumulate a[i, p] * B[p, :] in an L1-resident block of columns, four
//   rows of B at a time, so B is read row by row, as stored.
// Columns of y are split across threads; each thread reads its own slice of B.
#include "kernels/cpu/gemv.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "kernels/cpu/vector_width.hpp"
#include "porta/error.hpp"

namespace porta::cpu {
namespace {

#define PORTA_GEMV_INLINE inline __attribute__((always_inline))

struct Epilogue {
  const GemvProblem& p;
  int64_t row0;  // first row of A of this group
  PORTA_GEMV_INLINE void put(int64_t i, int64_t j, float s) const {
    float v = p.alpha * s;
    if (p.c) v += p.beta * p.c[(row0 + i) * p.c_row_step + j * p.c_col_step];
    p.y[(row0 + i) * p.n + j] = v;
  }
};

// Dot products of M rows of A (a, stride k) with R rows of B starting at row j of B, in
// vectors of VB bytes (the clone's width: vector_width.hpp).
template <int VB, int M, int R>
PORTA_GEMV_INLINE void nk_dots(const float* a, const float* b, int64_t k, int64_t j, const Epilogue& out) {
  using V = typename VecOf<float, VB>::type;
  constexpr int L = VB / 4;
  V acc[M][R];
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc[i][r] = V{};
  const float* bj = b + j * k;
  int64_t p = 0;
  for (; p + L <= k; p += L) {
    V bv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) std::memcpy(&bv[r], bj + r * k + p, VB);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      V av;
      std::memcpy(&av, a + i * k + p, VB);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[i][r] += av * bv[r];
    }
  }
  for (int i = 0; i < M; ++i)
    for (int r = 0; r < R; ++r) {
      float s = 0.0f;
      for (int l = 0; l < L; ++l) s += acc[i][r][l];
      for (int64_t q = p; q < k; ++q) s += a[i * k + q] * bj[r * k + q];
      out.put(i, j + r, s);
    }
}

// Rows of B per group: M x R sums, R rows of B and one of A fit the registers (32 zmm; 16 ymm
// or xmm: four rows of A take two rows of B at a time).
template <int VB, int M>
constexpr int kNkRows = VB == 64 || M <= 2 ? 4 : 2;

template <int VB, int M>
PORTA_GEMV_INLINE void nk_rows(const float* a, const float* b, int64_t k, int64_t j0, int64_t j1, const Epilogue& out) {
  constexpr int R = kNkRows<VB, M>;
  int64_t j = j0;
  for (; j + R <= j1; j += R) nk_dots<VB, M, R>(a, b, k, j, out);
  for (; j < j1; ++j) nk_dots<VB, M, 1>(a, b, k, j, out);
}

// Columns [j0, j0 + w) of M rows of y, w <= kKnBlock: acc (M x kKnBlock floats) gathers
// sum_p a[i, p] * B[p, j], four rows of B per pass over it.
constexpr int64_t kKnBlock = 512;

template <int VB, int M>
PORTA_GEMV_INLINE void kn_block(const float* a, const float* b, int64_t k, int64_t n, int64_t j0, int64_t w,
                                float* acc, const Epilogue& out) {
  using V = typename VecOf<float, VB>::type;
  constexpr int L = VB / 4;
  std::fill(acc, acc + M * kKnBlock, 0.0f);
  const int64_t wv = w / L * L;  // columns in whole vectors
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const float* b0 = b + p * n + j0;
    const float *b1 = b0 + n, *b2 = b1 + n, *b3 = b2 + n;
    for (int64_t jj = 0; jj < wv; jj += L) {
      V v0, v1, v2, v3;
      std::memcpy(&v0, b0 + jj, VB);
      std::memcpy(&v1, b1 + jj, VB);
      std::memcpy(&v2, b2 + jj, VB);
      std::memcpy(&v3, b3 + jj, VB);
#pragma GCC unroll 4
      for (int i = 0; i < M; ++i) {
        const float* ai = a + i * k + p;
        V s;
        std::memcpy(&s, acc + i * kKnBlock + jj, VB);
        s += ai[0] * v0 + ai[1] * v1 + ai[2] * v2 + ai[3] * v3;
        std::memcpy(acc + i * kKnBlock + jj, &s, VB);
      }
    }
    for (int64_t jj = wv; jj < w; ++jj)
      for (int i = 0; i < M; ++i) {
        const float* ai = a + i * k + p;
        acc[i * kKnBlock + jj] += ai[0] * b0[jj] + ai[1] * b1[jj] + ai[2] * b2[jj] + ai[3] * b3[jj];
      }
  }
  for (; p < k; ++p) {
    const float* bp = b + p * n + j0;
    for (int i = 0; i < M; ++i) {
      const float av = a[i * k + p];
      for (int64_t jj = 0; jj < w; ++jj) acc[i * kKnBlock + jj] += av * bp[jj];
    }
  }
  for (int i = 0; i < M; ++i)
    for (int64_t jj = 0; jj < w; ++jj) out.put(i, j0 + jj, acc[i * kKnBlock + jj]);
}

template <int VB, int M>
PORTA_GEMV_INLINE void kn_rows(const float* a, const float* b, int64_t k, int64_t n, int64_t j0, int64_t j1,
                               float* acc, const Epilogue& out) {
  for (int64_t j = j0; j < j1; j += kKnBlock) kn_block<VB, M>(a, b, k, n, j, std::min(kKnBlock, j1 - j), acc, out);
}

template <int VB>
PORTA_GEMV_INLINE void gemv_columns_at(const GemvProblem& p, const float* a, int64_t rows, int64_t j0, int64_t j1,
                                       float* acc, const Epilogue& out) {
  if (p.b_nk) {
    switch (rows) {
      case 1: return nk_rows<VB, 1>(a, p.b, p.k, j0, j1, out);
      case 2: return nk_rows<VB, 2>(a, p.b, p.k, j0, j1, out);
      case 3: return nk_rows<VB, 3>(a, p.b, p.k, j0, j1, out);
      default: return nk_rows<VB, 4>(a, p.b, p.k, j0, j1, out);
    }
  }
  switch (rows) {
    case 1: return kn_rows<VB, 1>(a, p.b, p.k, p.n, j0, j1, acc, out);
    case 2: return kn_rows<VB, 2>(a, p.b, p.k, p.n, j0, j1, acc, out);
    case 3: return kn_rows<VB, 3>(a, p.b, p.k, p.n, j0, j1, acc, out);
    default: return kn_rows<VB, 4>(a, p.b, p.k, p.n, j0, j1, acc, out);
  }
}

// Columns [j0, j1) of rows [row0, row0 + rows) of y, rows <= kGemvMaxRows.
PORTA_CPU_CLONES
void gemv_columns(const GemvProblem& p, int64_t row0, int64_t rows, int64_t j0, int64_t j1, float* acc) {
  const float* a = p.a + row0 * p.k;
  Epilogue out{p, row0};
  switch (vector_bytes()) {
    case 64: return gemv_columns_at<64>(p, a, rows, j0, j1, acc, out);
    case 32: return gemv_columns_at<32>(p, a, rows, j0, j1, acc, out);
    default: return gemv_columns_at<16>(p, a, rows, j0, j1, acc, out);
  }
}

}  // namespace

std::string gemv_declines(int64_t m, int64_t n, int64_t k, bool b_nk) {
  if (m > kGemvMaxRows)
    return str(m, " rows of A: enough reuse of B for a GEMM (the loop takes up to ", kGemvMaxRows, ")");
  if (n * k < kGemvMinWeights)
    return str("B holds ", n * k, " elements: it stays in cache (the loop starts at ", kGemvMinWeights, ")");
  // Dot products end in a sum across lanes per output; with 4 rows of A (resnext50's 1x1 convs
  // over 4 pixels, 512x2048 weights) they measured 1.3x slower than oneDNN's packed kernel.
  if (b_nk && n > 1 && m > 1) return str(m, " rows of A against an n x k B: the loop takes one row there");
  if (b_nk && n > 1 && k < kGemvMinRowNk)
    return str("rows of B of ", k, " elements: too short for dot products (the loop takes ", kGemvMinRowNk, " or more)");
  return "";
}

void gemv(const GemvProblem& problem) {
  if (problem.m <= 0 || problem.n <= 0) return;
  GemvProblem p = problem;
  if (p.n == 1) p.b_nk = true;  // a k x 1 B is a 1 x k row: dot products in vector lanes
  // Units of columns handed to threads: 4 rows of an n x k B, 16 columns of a k x n one; a
  // thread gets at least 2^16 elements of B.
  const int64_t unit = p.b_nk ? 4 : 16;
  const int64_t units = (p.n + unit - 1) / unit;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(p.k * unit, 1));
  parallel_for(units, grain, [&](int64_t u0, int64_t u1) {
    std::vector<float> acc(p.b_nk ? 0 : static_cast<size_t>(kGemvMaxRows * kKnBlock));
    const int64_t j0 = u0 * unit, j1 = std::min(p.n, u1 * unit);
    for (int64_t row0 = 0; row0 < p.m; row0 += kGemvMaxRows)
      gemv_columns(p, row0, std::min(kGemvMaxRows, p.m - row0), j0, j1, acc.data());
  });
}

}  // namespace porta::cpu
