// porta cpu kernels — products of a few rows against a constant matrix packed once per session
// in panels of kPanel columns (each a K x kPanel block read front to back). Such a product does
// a few multiply-adds per weight read, so its time is the time to stream the weights: every
// panel is read from memory once (prefetched ahead), its sums for all rows kept in registers a
// pass of rows at a time, the later passes reading it from the core's cache. The small-map Conv
// (conv_small_map.cpp: im2col patches as the rows) and the cpu MatMul's "panels"
// implementation (matmul.cpp) run on it.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/thread_policy.hpp"
#include "ops/fused_activation.hpp"

namespace porta::cpu {

/// Storage of bf16 panels, 64-byte aligned so that a pair row (128 bytes) is two whole cache
/// lines: std::vector's large allocations (mmap'd by malloc) start 16 bytes past a page
/// boundary, which splits every 64-byte load of a panel across two lines. vit_b_16 in bf16 at
/// one thread, alternating processes, median ms: 12.3 -> 11.4 and 12.5 -> 11.2. The f32 panels
/// keep std::vector's allocation: aligned, vit_b_16 in f32 measured 20.8 -> 22.5 and 20.5 ->
/// 22.1 ms, resnet18, googlenet, inception_v3, convnext_tiny and densenet121 within their spread
/// (Zen 5, 2026-12-05).
template <class T>
struct PanelAllocator {
  using value_type = T;
  PanelAllocator() = default;
  template <class U>
  PanelAllocator(const PanelAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <class U>
  bool operator==(const PanelAllocator<U>&) const { return true; }
};
/// The two kinds of panels, named alike as PanelStep's argument. The f32 ones stay in
/// std::vector's own allocation (measured above).
using PanelsF32 = std::vector<float>;
using PanelsBf16 = std::vector<uint32_t, PanelAllocator<uint32_t>>;

/// Output columns per panel: two AVX-512 vectors, four AVX2 ones.
inline constexpr int64_t kPanel = 32;
/// Rows one panel_product call takes at most (its sums for one panel sit on the stack).
inline constexpr int64_t kPanelMaxRows = 64;

/// Rows whose sums one pass over a panel keeps in registers at this CPU's vector width
/// (vector_width.hpp): 12 with AVX-512, 6 with AVX2 or SSE (over half a panel at a time).
int64_t panel_rows_per_pass();

/// sums[i][0..kPanel) = row i of `a` (rows <= panel_rows_per_pass(), row stride k) times one
/// panel (k rows of kPanel floats): row group `group` of the `groups` a product passes over
/// each panel in. Group 0 prefetches the panel ahead of its reads; with a `next_panel` (the
/// next one's first row, or null), every group prefetches its share of it, so the memory
/// streams while the later passes read this one from cache.
void panel_rows(const float* a, int64_t rows, int64_t k, const float* panel, float* sums, int group, int groups,
                const float* next_panel);

/// sums[i][columns of pass `pass`] = row i of `a` (rows <= panel_rows_per_pass()) times the
/// columns of one of the panel_column_passes() column passes over a panel, prefetching only
/// those columns' cache lines: a unit of panel_units' split.
void panel_columns(const float* a, int64_t rows, int64_t k, const float* panel, float* sums, int pass);
/// Passes over a panel's columns: kPanel over the columns whose sums one pass keeps in
/// registers (1 with AVX-512, 2 with AVX2, 4 with SSE).
int panel_column_passes();

/// How panel_product splits a product of fewer panels than twice the call's thread budget
/// (kernels/cpu/thread_policy.hpp) from 0.5 MFLOP (times parallel_scale()): threads take units
/// of (panel, column pass, group of rows). `threads` is 1 where such a product runs whole on
/// the calling thread or as whole panels (panel_product's usual split).
struct PanelUnits {
  int threads = 1;
  int64_t groups = 0, per_group = 0;  ///< groups of rows, rows in each (the last may have fewer)
  int64_t units = 0;                  ///< panels x column passes x groups
};
PanelUnits panel_units(int64_t rows, int64_t k, int64_t panels);

/// Panels of a matrix whose row j holds output column j's K weights (n x k: a Linear layer's
/// weight, Gemm's B with transB), zeros past the last column.
PanelsF32 pack_panels_nk(const float* w, int64_t n, int64_t k);
/// Panels of a k x n matrix (MatMul's B).
PanelsF32 pack_panels_kn(const float* b, int64_t k, int64_t n);

/// Why the MatMul and Gemm "panels" implementations decline a product of `rows` rows against a
/// session-constant B of k x n elements, stored n x k when `b_nk` ("" when they take it): one
/// row against an n x k B goes to the gemv loop (dot products along B's rows as stored); past
/// panel_product_max_rows() rows oneDNN's GEMM reuses B enough; a B of fewer than 2^15
/// elements stays in cache, where oneDNN's repacking costs little. From 2 to 4 rows, and one
/// row against a k x n B, the panels' four prefetched runs stream B faster than the gemv loop
/// reads it as stored (an AVX2 Zen 3 at one thread, six alternating 768x3072 / 3072x768
/// products, ms: 4 rows kn 3.5 against gemv 6.0 and ORT 4.2; 2 rows kn 3.9 / 5.6 / 4.3; 2 rows
/// nk 3.35 against oneDNN 6.0 and ORT 3.3; 1 row kn 3.7 / 4.2 / 3.4; but 1 row nk 3.7 against
/// gemv 2.7).
std::string panel_product_declines(int64_t rows, int64_t k, int64_t n, bool b_nk);
/// Rows the MatMul and Gemm "panels" implementations take at most, by vector width: 32 with
/// AVX-512, 64 with AVX2, where oneDNN's f32 GEMM (gemm:jit) repacks B on every call
/// (docs/PERFORMANCE.md, the Log 2026-12-04 20:41). With AVX-512, eight chained 768x3072 /
/// 3072x768 products streamed from memory ran 5-15% faster on the panels than on oneDNN at 17
/// to 48 rows and even at 64; with B in cache (192x768 / 768x192) even at 24 and 32 rows on one
/// thread, 5-14% faster on two, but 4-10% slower at 64 (Zen 5, 2026-12-05; vit_b_16's 17-row
/// products: the model 12% faster at one and two threads).
int64_t panel_product_max_rows();
/// Pixels up to which the small-map Conv runs a dilated conv tap by tap (conv_small_map.cpp):
/// 16 with AVX-512, where oneDNN's direct kernels take more, 64 with AVX2.
int64_t panel_tap_max_rows();
/// The session-constant `b` packed in panels once (cached_derived, keyed on its storage): its
/// rows are output columns (n x k: Gemm's transB) when `nk`, else it is k x n.
std::shared_ptr<const PanelsF32> cached_panels(const Tensor& b, bool nk);

/// A MatMul's or Gemm's prepared panels (KernelContext::state), of either kind (PanelsF32 or
/// PanelsBf16): B told apart by its storage and offset (a session may have freed B's bytes:
/// KernelContext::held), the fused activation.
template <class Panels>
struct PanelStep {
  const void* storage = nullptr;
  int64_t offset = 0;
  std::shared_ptr<const Panels> packed;
  opdef::FusedActivation act;
  bool weights_cached = false;  ///< panel_product's weights_cached, from the session's constants
  bool fits(const Tensor& b) const { return b.storage().get() == storage && b.offset() == offset; }
};
using PanelProductStep = PanelStep<PanelsF32>;
/// A fresh step for `packed` (the panels of the call's input 1) and `op`'s fused activation,
/// made the call's state, with no held weight declared yet.
template <class Panels>
PanelStep<Panels>& install_panel_step(KernelContext& ctx, std::shared_ptr<const Panels> packed, const char* op) {
  const Tensor& b = ctx.in(1);
  auto fresh = std::make_shared<PanelStep<Panels>>();
  fresh->storage = b.storage().get();
  fresh->offset = b.offset();
  fresh->packed = std::move(packed);
  fresh->act = opdef::parse_fused_activation(*ctx.attrs, op);
  ctx.held.clear();
  ctx.state = fresh;
  return *fresh;
}
/// The step's state for constant input 1 (B, n x k when `nk`), prepared on the first call or when B
/// changed: packed once (cached_panels), declared held (KernelContext::held: rebuilding B
/// unpacks the panels), `op`'s fused activation parsed; weights_cached from the call's
/// session_constant_bytes.
PanelProductStep& panel_product_step(KernelContext& ctx, bool nk, const char* op);

/// y (rows x n, dense) = a (rows x k) times the step's panels, plus `bias` (n values, or null)
/// along each row, then the step's fused activation: MatMul's and Gemm's "panels" call.
void dense_panel_product(const float* a, int64_t rows, int64_t k, const PanelProductStep& step, int64_t n,
                         const float* bias, float* y);

/// bf16 panels (AVX-512 BF16's dot product of pairs, vdpbf16ps): a constant B rounded to bf16
/// once per session and packed as kPanel-column panels of K in pairs, each pair row kPanel
/// 32-bit lanes holding (row 2q, row 2q + 1) of one column, 128 bytes as an f32 panel's row (a
/// K-odd B ends in a zero row). A product rounds A's rows to bf16 pairs, sums in f32 and writes
/// f32 with the f32 bias and the fused activation: MatMul's and Gemm's "panels" calls that
/// compute in bf16 inside (KernelDef::computes_in). Why not oneDNN's bf16 matmul at these rows:
/// docs/PERFORMANCE.md, "Compute precision".
/// Whether this CPU has AVX-512 BF16 (fixed for the process; false in TSan builds, which take
/// the baseline code only).
bool panel_bf16_available();
/// Why the bf16 panels decline a product of `rows` rows against a k x n constant B ("" when
/// they take it).
std::string panel_product_bf16_declines(int64_t rows, int64_t k, int64_t n);
/// The bf16 panels of constant `b` (n x k when `nk`, else k x n), packed once (cached_derived).
std::shared_ptr<const PanelsBf16> cached_panels_bf16(const Tensor& b, bool nk);
/// A MatMul's or Gemm's prepared bf16 panels (KernelContext::state). It declares no held
/// weight: bf16 panels cannot rebuild the f32 B.
using PanelProductBf16Step = PanelStep<PanelsBf16>;
PanelProductBf16Step& panel_product_bf16_step(KernelContext& ctx, bool nk, const char* op);
/// y (rows x n, dense, rows <= kPanelMaxRows) = a (rows x k, f32, rounded to bf16 here) times
/// the step's bf16 panels, plus `bias` (n f32 values, or null) along each row, then the fused
/// activation. Panels split over threads as panel_product's do.
void dense_panel_product_bf16(const float* a, int64_t rows, int64_t k, const PanelProductBf16Step& step, int64_t n,
                              const float* bias, float* y);
/// The bf16 product with a store per panel: a (rows x k f32, rows <= 64) rounded to bf16 pairs
/// here, times `packed` (bf16 panels for this k, n columns); store(first column, columns, sums)
/// with sums rows x kPanel floats it may change, as panel_product's. Panels split over threads
/// as panel_product's do; `weights_cached` as there.
void panel_product_bf16(const float* a, int64_t rows, int64_t k, const uint32_t* packed, int64_t n,
                        const std::function<void(int64_t, int64_t, float*)>& store, bool weights_cached);
/// f32 panels (k rows of kPanel floats each, `panels` of them) as bf16 panels of the same
/// columns: the small-map Conv's weights, packed in its tap order.
PanelsBf16 bf16_panels_of(const float* panels_f32, int64_t k, int64_t panels);

/// Weights (elements) per thread from which a product splits its panels over threads. Panels
/// split over the threads of the call's budget from 16 Ki weights (64 KB, a few us of
/// streaming) per thread, whatever the call's own size earned (kernels/cpu/thread_policy.hpp:
/// these calls read 60-250 KB and compute ~1 MFLOP, below both thresholds). At 2 threads,
/// per-node minima: mobilenet_v2's 96->576 1x1 over 4x4 12.6 -> 9.8 us, googlenet's
/// inception4c 1x1 16.0 -> 11.1 us; 4 Ki per thread measured the same as 16 Ki. Times
/// parallel_scale(), as the call thresholds are.
inline constexpr int64_t kPanelParallelWeights = int64_t{1} << 14;

/// `a` (rows x k, rows <= kPanelMaxRows) times the packed matrix (n columns): for each panel,
/// the sums of every row, then store(first column, columns, sums) with sums rows x kPanel
/// floats it may change (row r at sums + r * kPanel). Panels split over threads. Panel p
/// starts at packed + p * panel_stride floats (0: k * kPanel, panels packed for this k; more
/// when the product takes k rows out of longer panels, e.g. one tap of a conv's).
/// `weights_cached`: the packed matrix stays in the last cache level between calls (the
/// session's constants fit there: constants_stay_cached), so no pass prefetches the next panel.
/// Those prefetches keep the memory streaming while a panel is read back from the core's
/// cache, but cost time where the panels come from the last cache level. On an AVX2 Zen 3
/// (32 MB L3; alternating processes, fastest of 20 runs, median over 24 processes each), the
/// zoo models whose constants fit in 16 MB ran without them at two threads: mobilenet_v2
/// (14 MB) -5%, mnasnet0_5 -3.5%, mobilenet_v3_small -5%, shufflenet_v2_x0_5, squeezenet1_1,
/// lraspp within +-1.5%; at one thread mnasnet0_5 -4%, mobilenet_v3_small -3%, squeezenet1_1
/// -2%. Without them everywhere, the larger ones lost at two threads: efficientnet_b0 (21 MB)
/// +6%, regnet_y_400mf (17 MB) +3.5%, resnet18 (47 MB) +9%, inception_v3 +8%.
template <class Store>
void panel_product(const float* a, int64_t rows, int64_t k, const float* packed, int64_t n, Store&& store,
                   int64_t panel_stride = 0, bool weights_cached = false) {
  if (panel_stride == 0) panel_stride = k * kPanel;
  const int64_t panels = (n + kPanel - 1) / kPanel;
  const int64_t most = panel_rows_per_pass();
  const int64_t passes = (rows + most - 1) / most, per_pass = (rows + passes - 1) / passes;
  const PanelUnits split = panel_units(rows, k, panels);
  if (split.threads > 1) {
    // Few panels: units of (panel, column pass, rows) on each thread, the sums of all panels
    // gathered on the calling thread, stored after.
    thread_local std::vector<float> gathered;
    gathered.resize(static_cast<size_t>(panels * rows * kPanel));
    float* const all = gathered.data();
    const int64_t cp = panel_column_passes();
    ThreadScope wider(split.threads);
    parallel_for(split.units, 1, [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t g = u % split.groups, c = u / split.groups % cp, p = u / (split.groups * cp);
        const int64_t r0 = g * split.per_group;
        panel_columns(a + r0 * k, std::min(split.per_group, rows - r0), k, packed + p * panel_stride,
                      all + (p * rows + r0) * kPanel, static_cast<int>(c));
      }
    });
    for (int64_t p = 0; p < panels; ++p) store(p * kPanel, std::min(kPanel, n - p * kPanel), all + p * rows * kPanel);
    return;
  }
  const int64_t grain = std::max<int64_t>(
      1, static_cast<int64_t>(static_cast<double>(kPanelParallelWeights) * parallel_scale()) /
             std::max<int64_t>(k * kPanel, 1));
  ThreadScope wider(panels > grain ? call_thread_budget() : omp_get_max_threads());
  parallel_for(panels, grain, [&](int64_t p0, int64_t p1) {
    float sums[kPanelMaxRows * kPanel];
    for (int64_t p = p0; p < p1; ++p) {
      const float* panel = packed + p * panel_stride;
      for (int64_t r0 = 0; r0 < rows; r0 += per_pass)
        panel_rows(a + r0 * k, std::min(per_pass, rows - r0), k, panel, sums + r0 * kPanel,
                   static_cast<int>(r0 / per_pass), static_cast<int>(passes),
                   p + 1 < p1 && !weights_cached ? panel + panel_stride : nullptr);
      store(p * kPanel, std::min(kPanel, n - p * kPanel), sums);
    }
  });
}

}  // namespace porta::cpu
