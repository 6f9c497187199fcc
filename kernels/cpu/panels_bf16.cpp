// porta cpu kernels — bf16 products of a few rows against panels (panels.hpp), on AVX-512 BF16.
//
// A pass keeps the f32 sums of up to 12 rows for one panel's 32 columns in 24 zmm registers; each
// step loads one pair row of the panel (two vectors of 16 column pairs) and, per row, broadcasts
// that row's pair of A and adds the two products of each column with one vdpbf16ps. The first
// pass over a panel prefetches ahead in it (and so into the next panel, which follows it in
// memory); with more than one pass, the later ones (reading the panel from the core's cache)
// prefetch shares of the next panel, so the memory keeps streaming, as the f32 panels do.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <functional>

#include "porta/util.hpp"

#include "kernels/cpu/cache_size.hpp"
#include "kernels/cpu/custom_vmath.hpp"
#include "kernels/cpu/fused_activation.hpp"
#include "kernels/cpu/panels.hpp"

namespace porta::cpu {
namespace {

/// Pair rows (128 bytes each) the first pass over a panel prefetches ahead: 8 KB in flight, as
/// the f32 panels' kAhead rows.
constexpr int64_t kAheadPairs = 64;
/// Rows whose sums one pass keeps in registers: 24 sums + 2 panel vectors + 1 broadcast pair of
/// the 32 zmm.
constexpr int64_t kBf16PassRows = 12;
/// Rows the bf16 panels take at most (the sums of one panel for all rows sit on the stack).
constexpr int64_t kBf16MaxRows = kPanelMaxRows;

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
#define PORTA_BF16_TARGET __attribute__((target("avx512f,avx512bf16")))

template <int M, bool kFirst, bool kNext>
PORTA_BF16_TARGET inline __attribute__((always_inline)) void bf16_pass(const uint32_t* a2, int64_t kp,
                                                                      const uint32_t* panel, float* sums,
                                                                      const uint32_t* next, int64_t every) {
  __m512 acc[M][2];
#pragma GCC unroll 12
  for (int i = 0; i < M; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  int64_t countdown = 0;
  for (int64_t q = 0; q < kp; ++q) {
    if constexpr (kFirst) {
      __builtin_prefetch(panel + (q + kAheadPairs) * kPanel, 0, 2);
      __builtin_prefetch(panel + (q + kAheadPairs) * kPanel + 16, 0, 2);
    }
    if constexpr (kNext) {
      if (countdown-- == 0) {
        __builtin_prefetch(next, 0, 2);
        __builtin_prefetch(next + 16, 0, 2);
        next += kPanel;
        countdown = every - 1;
      }
    }
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(panel + q * kPanel);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(panel + q * kPanel + 16);
#pragma GCC unroll 12
    for (int i = 0; i < M; ++i) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(a2[i * kp + q]));
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], av, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], av, b1);
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < M; ++i) {
    _mm512_storeu_ps(sums + i * kPanel, acc[i][0]);
    _mm512_storeu_ps(sums + i * kPanel + 16, acc[i][1]);
  }
}

// bf16_pass for `rows` rows (1..M): the instance of that many, its prefetches chosen at compile
// time.
template <int M>
PORTA_BF16_TARGET inline __attribute__((always_inline)) void bf16_pass_rows(int64_t rows, const uint32_t* a2,
                                                                           int64_t kp, const uint32_t* panel,
                                                                           float* sums, bool first,
                                                                           const uint32_t* next, int64_t every) {
  if constexpr (M > 1)
    if (rows < M) return bf16_pass_rows<M - 1>(rows, a2, kp, panel, sums, first, next, every);
  if (first) return bf16_pass<M, true, false>(a2, kp, panel, sums, nullptr, every);
  if (next) return bf16_pass<M, false, true>(a2, kp, panel, sums, next, every);
  bf16_pass<M, false, false>(a2, kp, panel, sums, nullptr, every);
}

// Every row of a2 (rows x kp pairs) times one panel; the passes after the first prefetch the
// next panel (when given) in equal shares.
PORTA_BF16_TARGET void bf16_panel(const uint32_t* a2, int64_t rows, int64_t kp, const uint32_t* panel, float* sums,
                                  const uint32_t* next_panel) {
  const int64_t passes = (rows + kBf16PassRows - 1) / kBf16PassRows, per = (rows + passes - 1) / passes;
  const int64_t share = passes > 1 ? (kp + passes - 2) / (passes - 1) : 0;
  for (int64_t g = 0; g < passes; ++g) {
    const int64_t r0 = g * per;
    const uint32_t* next = g > 0 && next_panel ? next_panel + (g - 1) * share * kPanel : nullptr;
    const int64_t every = share > 0 ? std::max<int64_t>(1, kp / share) : 1;
    bf16_pass_rows<kBf16PassRows>(std::min(per, rows - r0), a2 + r0 * kp, kp, panel, sums + r0 * kPanel, g == 0,
                                  next, every);
  }
}
#undef PORTA_BF16_TARGET
#else
void bf16_panel(const uint32_t*, int64_t, int64_t, const uint32_t*, float*, const uint32_t*) {
  throw BackendError("[panels] bf16 panels need AVX-512 BF16");
}
#endif

// `rows` x `k` f32 values (row stride k) rounded to bf16, as rows of ceil(k / 2) pairs (a K-odd
// row ends in a zero half).
void to_pairs(const float* a, int64_t rows, int64_t k, uint32_t* a2) {
  const int64_t kp = (k + 1) / 2;
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t* row = a2 + r * kp;
    if (k % 2) row[kp - 1] = 0;
    vmath::f32_to_bf16_n(a + r * k, reinterpret_cast<uint16_t*>(row), k);
  }
}

PanelsBf16 pack_panels_bf16(const float* b, int64_t rows, int64_t cols, bool nk) {
  const int64_t n = nk ? rows : cols, k = nk ? cols : rows, kp = (k + 1) / 2;
  const int64_t panels = (n + kPanel - 1) / kPanel;
  PanelsBf16 packed(static_cast<size_t>(panels * kp * kPanel), 0u);
  std::vector<uint16_t> line(static_cast<size_t>(std::max(rows, cols)));
  for (int64_t r = 0; r < rows; ++r) {  // each row of b as stored, rounded, then scattered
    vmath::f32_to_bf16_n(b + r * cols, line.data(), cols);
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t j = nk ? r : c, q = nk ? c : r;
      packed[static_cast<size_t>((j / kPanel) * kp * kPanel + (q / 2) * kPanel + j % kPanel)] |=
          static_cast<uint32_t>(line[static_cast<size_t>(c)]) << (16 * (q % 2));
    }
  }
  return packed;
}

}  // namespace

bool panel_bf16_available() { return has_avx512_bf16(); }

std::string panel_product_bf16_declines(int64_t rows, int64_t k, int64_t n) {
  constexpr int64_t kMinWeights = int64_t{1} << 15;
  if (!panel_bf16_available()) return "no AVX-512 BF16 on this CPU: the onednn implementation converts";
  if (rows == 0) return "no rows";
  if (rows > kBf16MaxRows)
    return str(rows, " rows: enough reuse of B for oneDNN's bf16 GEMM (bf16 panels take up to ", kBf16MaxRows, ")");
  if (k * n < kMinWeights) return str("B of ", k * n, " elements stays in cache (panels start at ", kMinWeights, ")");
  return "";
}

std::shared_ptr<const PanelsBf16> cached_panels_bf16(const Tensor& b, bool nk) {
  return std::static_pointer_cast<const PanelsBf16>(
      cached_derived(b, nk ? "panels-bf16-nk" : "panels-bf16-kn", [&] {
        return std::static_pointer_cast<const void>(std::make_shared<const PanelsBf16>(
            pack_panels_bf16(b.data<float>(), b.dim(0), b.dim(1), nk)));
      }));
}

PanelProductBf16Step& panel_product_bf16_step(KernelContext& ctx, bool nk, const char* op) {
  const Tensor& b = ctx.in(1);
  auto* step = static_cast<PanelProductBf16Step*>(ctx.state.get());
  if (!step || !step->fits(b)) step = &install_panel_step(ctx, cached_panels_bf16(b, nk), op);
  step->weights_cached = constants_stay_cached(ctx.session_constant_bytes);
  return *step;
}

void panel_product_bf16(const float* a, int64_t rows, int64_t k, const uint32_t* packed, int64_t n,
                        const std::function<void(int64_t, int64_t, float*)>& store, bool weights_cached) {
  if (rows <= 0 || n <= 0) return;
  if (rows > kBf16MaxRows)
    throw BackendError(str("[panels] a bf16 panel product of ", rows, " rows (at most ", kBf16MaxRows, ")"));
  const int64_t kp = (k + 1) / 2, stride = kp * kPanel, panels = (n + kPanel - 1) / kPanel;
  thread_local std::vector<uint32_t> pairs;
  pairs.resize(static_cast<size_t>(rows * kp));
  to_pairs(a, rows, k, pairs.data());
  // The calling thread's buffer, by pointer: the panels run on the product's threads.
  const uint32_t* a2 = pairs.data();
  const int64_t grain = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(kPanelParallelWeights) * parallel_scale()) /
             std::max<int64_t>(k * kPanel, 1));
  ThreadScope wider(panels > grain ? call_thread_budget() : omp_get_max_threads());
  parallel_for(panels, grain, [&](int64_t p0, int64_t p1) {
    alignas(64) float sums[kBf16MaxRows * kPanel];
    for (int64_t p = p0; p < p1; ++p) {
      bf16_panel(a2, rows, kp, packed + p * stride, sums,
                 p + 1 < p1 && !weights_cached ? packed + (p + 1) * stride : nullptr);
      store(p * kPanel, std::min(kPanel, n - p * kPanel), sums);
    }
  });
}

void dense_panel_product_bf16(const float* a, int64_t rows, int64_t k, const PanelProductBf16Step& step, int64_t n,
                              const float* bias, float* y) {
  panel_product_bf16(
      a, rows, k, step.packed->data(), n,
      [&](int64_t o0, int64_t width, float* sums) {
        if (bias)
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = 0; j < width; ++j) sums[r * kPanel + j] += bias[o0 + j];
        // One call over the panel's sums of every row (columns past n hold finite sums of zero
        // weights, never stored): a GELU per row of 32 columns cost convnext_tiny's 64-row
        // products more than their arithmetic.
        activate_f32(step.act, sums, rows * kPanel);
        for (int64_t r = 0; r < rows; ++r) std::copy_n(sums + r * kPanel, width, y + r * n + o0);
      },
      step.weights_cached);
}

PanelsBf16 bf16_panels_of(const float* panels_f32, int64_t k, int64_t panels) {
  const int64_t kp = (k + 1) / 2;
  PanelsBf16 packed(static_cast<size_t>(panels * kp * kPanel), 0u);
  std::vector<uint16_t> row(static_cast<size_t>(kPanel));
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t q = 0; q < k; ++q) {
      vmath::f32_to_bf16_n(panels_f32 + (p * k + q) * kPanel, row.data(), kPanel);
      uint32_t* lanes = packed.data() + (p * kp + q / 2) * kPanel;
      for (int64_t j = 0; j < kPanel; ++j)
        lanes[j] |= static_cast<uint32_t>(row[static_cast<size_t>(j)]) << (16 * (q % 2));
    }
  return packed;
}

}  // namespace porta::cpu
