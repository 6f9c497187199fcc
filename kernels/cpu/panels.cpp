// porta cpu kernels — products of rows against panels (panels.hpp).
#include "kernels/cpu/panels.hpp"

#include <algorithm>
#include <cstring>

#include "porta/util.hpp"

#include "kernels/cpu/cache_size.hpp"
#include "kernels/cpu/fused_activation.hpp"
#include "kernels/cpu/gemv.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "kernels/cpu/vector_width.hpp"

namespace porta::cpu {
namespace {

#define PORTA_PANEL_INLINE inline __attribute__((always_inline))

/// Rows of a panel (128 bytes each) the first pass over it prefetches ahead: 8 KB in flight.
/// The hardware's own prefetch left a conv of one 147 KB panel (densenet121's 128->32 3x3 over
/// 2x2) reading memory at ~22 GB/s. Alternating processes, median of 50 runs, us: resnet18 at
/// one thread 2568-2764 -> 2180-2360, densenet121 3669-3769 -> 3331-3353, at two threads
/// densenet121 2508-2565 -> 2325-2332 (one outlier 2652), googlenet 1072-1437 -> 992-1077.
/// 160 rows measured the same as 64.
constexpr int64_t kAhead = 64;
/// Runs of rows of the next panel a pass prefetches at once (its share cut in as many parts,
/// a row of each every so many steps): one sequential stream left a core reading ~10 GB/s on an
/// AVX2 Zen 3, four streams ~19 (six 1x1 convs of 2048x1024 weights over 2x2 pixels, 48 MB, at
/// one thread, median of 6 alternating runs: one run 3.85 ms, two 3.2-3.5, four 2.9, eight 3.4
/// and erratic; ORT 3.1).
constexpr int kNextStreams = 4;

/// How a pass prefetches the panel it reads (panel_pass's `stream`): not at all (a later pass
/// over a panel already in cache), both cache lines of each row (the first pass over a panel
/// that later passes read too), or only the lines of its own columns (a pass that is the only
/// one over its columns on its core: panel_units).
constexpr int kStreamNone = 0, kStreamPanel = 1, kStreamOwn = 2;

// sums[i][c0..c0+H) = patch row i (of M, stride k) times columns c0..c0+H of one panel, in
// vectors of VB bytes (the clone's width: vector_width.hpp). `stream`: the pass that reads the panel
// first (from memory, or the last cache level): it prefetches kAhead rows ahead, past the
// panel's end into the next one (panels are contiguous). `next`, when
// not null: the first of the rows of the next panel this pass prefetches (both lines of each),
// kNextStreams at a time, `every` steps per row, so that the passes over one panel keep the
// memory busy with the next one.
template <int VB, int M, int H, int stream, bool kNext>
PORTA_PANEL_INLINE void panel_pass(const float* a, int64_t k, const float* panel, int64_t c0, float* sums,
                                   const float* next, int every) {
  using V = typename VecOf<float, VB>::type;
  constexpr int kLanes = VB / 4, kVecs = H / kLanes;
  V acc[M][kVecs];
#pragma GCC unroll 12
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) acc[i][v] = V{};
  int countdown = 0;
  const int64_t part = kNext ? (k / every + kNextStreams - 1) / kNextStreams * kPanel : 0;
  for (int64_t q = 0; q < k; ++q) {
    if constexpr (stream == kStreamPanel) {
      __builtin_prefetch(panel + (q + kAhead) * kPanel, 0, 2);
      __builtin_prefetch(panel + (q + kAhead) * kPanel + 16, 0, 2);
    } else if constexpr (stream == kStreamOwn) {
#pragma GCC unroll 2
      for (int line = 0; line < (H + 15) / 16; ++line)
        __builtin_prefetch(panel + (q + kAhead) * kPanel + c0 + line * 16, 0, 2);
    }
    if (kNext && countdown-- == 0) {
#pragma GCC unroll 4
      for (int s = 0; s < kNextStreams; ++s) {
        __builtin_prefetch(next + s * part, 0, 2);
        __builtin_prefetch(next + s * part + 16, 0, 2);
      }
      next += kPanel;
      countdown = kNextStreams * every - 1;
    }
    V b[kVecs];
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) std::memcpy(&b[v], panel + q * kPanel + c0 + v * kLanes, VB);
#pragma GCC unroll 12
    for (int i = 0; i < M; ++i) {
      const float av = a[i * k + q];
#pragma GCC unroll 4
      for (int v = 0; v < kVecs; ++v) acc[i][v] += av * b[v];
    }
  }
#pragma GCC unroll 12
  for (int i = 0; i < M; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < kVecs; ++v) std::memcpy(sums + i * kPanel + c0 + v * kLanes, &acc[i][v], VB);
}

// panel_pass for `rows` rows (1..M): the largest instance that fits, each one unrolled, with
// its prefetches chosen at compile time (a test in the loop cost registers: the rows' pointers
// spilled to the stack).
template <int VB, int M, int H>
PORTA_PANEL_INLINE void panel_pass_rows(int64_t rows, const float* a, int64_t k, const float* panel, int64_t c0,
                                        float* sums, int stream, const float* next, int every) {
  if constexpr (M > 1)
    if (rows < M) return panel_pass_rows<VB, M - 1, H>(rows, a, k, panel, c0, sums, stream, next, every);
  if (stream == kStreamOwn) return panel_pass<VB, M, H, kStreamOwn, false>(a, k, panel, c0, sums, nullptr, every);
  if (stream == kStreamPanel) {
    if (next) return panel_pass<VB, M, H, kStreamPanel, true>(a, k, panel, c0, sums, next, every);
    return panel_pass<VB, M, H, kStreamPanel, false>(a, k, panel, c0, sums, nullptr, every);
  }
  if (next) return panel_pass<VB, M, H, kStreamNone, true>(a, k, panel, c0, sums, next, every);
  panel_pass<VB, M, H, kStreamNone, false>(a, k, panel, c0, sums, nullptr, every);
}

// Register blockings per vector width: H panel columns per pass (VB-byte vectors, H / lanes of
// them a row) and up to kMaxPassRows rows, so that the sums, one panel row and the broadcast
// input fit the registers: AVX-512 32 x 12 (24 + 2 + 1 of 32 zmm), AVX2 16 x 6 (12 + 2 + 1 of
// 16 ymm), SSE 8 x 6 (the same in xmm).
template <int VB>
struct Blocking;
template <>
struct Blocking<64> {
  static constexpr int H = 32, kMaxPassRows = 12;
};
template <>
struct Blocking<32> {
  static constexpr int H = 16, kMaxPassRows = 6;
};
template <>
struct Blocking<16> {
  static constexpr int H = 8, kMaxPassRows = 6;
};

// Pass `group` of `groups` (of rows) over one panel, in kPanel / H passes of columns: together
// the groups * kPanel / H passes prefetch the next panel, each an equal share of its rows.
// (One pass streaming a panel and the next reading it from cache left the memory idle half
// the time on AVX2: six 1x1 convs of 2048x1024 weights over 2x2 pixels, 48 MB, took 4.3-5.1 ms
// against ORT's 2.4-2.8.)
template <int VB>
PORTA_PANEL_INLINE void panel_rows_at(const float* a, int64_t rows, int64_t k, const float* panel, float* sums,
                                      int group, int groups, const float* next_panel) {
  using B = Blocking<VB>;
  constexpr int kColumnPasses = kPanel / B::H;
  const int every = groups * kColumnPasses;
  const int64_t share = (k + every - 1) / every;
  for (int c = 0; c < kColumnPasses; ++c) {
    const int pass = group * kColumnPasses + c;
    const float* next = next_panel ? next_panel + pass * share * kPanel : nullptr;
    panel_pass_rows<VB, B::kMaxPassRows, B::H>(rows, a, k, panel, c * B::H, sums,
                                               group == 0 && c == 0 ? kStreamPanel : kStreamNone, next,
                                               std::max<int>(1, static_cast<int>(k / share)));
  }
}

template <int VB>
PORTA_PANEL_INLINE void panel_columns_at(const float* a, int64_t rows, int64_t k, const float* panel, float* sums,
                                         int pass) {
  using B = Blocking<VB>;
  panel_pass_rows<VB, B::kMaxPassRows, B::H>(rows, a, k, panel, pass * B::H, sums, kStreamOwn, nullptr, 1);
}

/// Floating-point operations (x parallel_scale()) from which a product of fewer panels than
/// twice the call's threads splits into units (panel_units). The calls it takes are the
/// single-panel convs of CNN tails at small images (densenet121's 128->32 3x3 over 4x4,
/// googlenet's 1x1 convs to 16-64 channels over 4x4): 1-3 panels that stayed on one thread.
/// Measured on an AVX2 Zen 3 at two threads, alternating processes, 12 x 100 runs each:
/// densenet121 fastest run 4954 -> 4750 us and median 5645 -> 5325, googlenet 2443 -> 2412 and
/// 2847 -> 2654, inception_v3 (6 x 100) 5373 -> 5109; the other zoo models whose products have
/// few panels within +-1% of their fastest runs. 0.1 MFLOP measured the same as 0.5.
constexpr double kPanelUnitsMinFlops = 0.5e6;

// One function per vector width, each compiled for its instruction set (target_clones.hpp).
#define PORTA_PANEL_WIDTH(TARGET, VB)                                                                            \
  TARGET void panel_rows_##VB(const float* a, int64_t rows, int64_t k, const float* panel, float* sums, int group, \
                              int groups, const float* next_panel) {                                             \
    panel_rows_at<VB>(a, rows, k, panel, sums, group, groups, next_panel);                                        \
  }                                                                                                               \
  TARGET void panel_columns_##VB(const float* a, int64_t rows, int64_t k, const float* panel, float* sums,         \
                                 int pass) {                                                                      \
    panel_columns_at<VB>(a, rows, k, panel, sums, pass);                                                          \
  }
PORTA_PANEL_WIDTH(PORTA_CPU_V4, 64)
PORTA_PANEL_WIDTH(PORTA_CPU_V3, 32)
PORTA_PANEL_WIDTH(, 16)
#undef PORTA_PANEL_WIDTH

}  // namespace

// Rows (of at most panel_rows_per_pass()) times one whole panel.
void panel_rows(const float* a, int64_t rows, int64_t k, const float* panel, float* sums, int group, int groups,
                const float* next_panel) {
  switch (vector_bytes()) {
    case 64: return panel_rows_64(a, rows, k, panel, sums, group, groups, next_panel);
    case 32: return panel_rows_32(a, rows, k, panel, sums, group, groups, next_panel);
    default: return panel_rows_16(a, rows, k, panel, sums, group, groups, next_panel);
  }
}

void panel_columns(const float* a, int64_t rows, int64_t k, const float* panel, float* sums, int pass) {
  switch (vector_bytes()) {
    case 64: return panel_columns_64(a, rows, k, panel, sums, pass);
    case 32: return panel_columns_32(a, rows, k, panel, sums, pass);
    default: return panel_columns_16(a, rows, k, panel, sums, pass);
  }
}

int panel_column_passes() {
  switch (vector_bytes()) {
    case 64: return static_cast<int>(kPanel / Blocking<64>::H);
    case 32: return static_cast<int>(kPanel / Blocking<32>::H);
    default: return static_cast<int>(kPanel / Blocking<16>::H);
  }
}

int64_t panel_rows_per_pass() {
  switch (vector_bytes()) {
    case 64: return Blocking<64>::kMaxPassRows;
    case 32: return Blocking<32>::kMaxPassRows;
    default: return Blocking<16>::kMaxPassRows;
  }
}

PanelUnits panel_units(int64_t rows, int64_t k, int64_t panels) {
  PanelUnits r;
  const int budget = call_thread_budget();
  if (budget <= 1 || panels >= 2 * budget || rows <= 0) return r;
  const double flops = 2.0 * static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(panels * kPanel);
  if (flops < kPanelUnitsMinFlops * parallel_scale()) return r;
  const int64_t cp = panel_column_passes(), most = panel_rows_per_pass();
  int64_t groups = (rows + most - 1) / most;
  while (panels * cp * groups < budget && groups < rows) ++groups;
  r.per_group = (rows + groups - 1) / groups;
  r.groups = (rows + r.per_group - 1) / r.per_group;
  r.units = panels * cp * r.groups;
  r.threads = static_cast<int>(std::min<int64_t>(budget, r.units));
  return r;
}

PanelsF32 pack_panels_nk(const float* w, int64_t n, int64_t k) {
  const int64_t panels = (n + kPanel - 1) / kPanel;
  PanelsF32 packed(static_cast<size_t>(panels * k * kPanel), 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    float* column = packed.data() + (j / kPanel) * k * kPanel + j % kPanel;
    for (int64_t q = 0; q < k; ++q) column[q * kPanel] = w[j * k + q];
  }
  return packed;
}

PanelsF32 pack_panels_kn(const float* b, int64_t k, int64_t n) {
  const int64_t panels = (n + kPanel - 1) / kPanel;
  PanelsF32 packed(static_cast<size_t>(panels * k * kPanel), 0.0f);
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t j0 = p * kPanel, width = std::min(kPanel, n - j0);
    float* panel = packed.data() + p * k * kPanel;
    for (int64_t q = 0; q < k; ++q) std::memcpy(panel + q * kPanel, b + q * n + j0, static_cast<size_t>(width) * 4);
  }
  return packed;
}

int64_t panel_product_max_rows() { return vector_bytes() >= 64 ? 32 : kPanelMaxRows; }
int64_t panel_tap_max_rows() { return vector_bytes() >= 64 ? 16 : kPanelMaxRows; }

std::string panel_product_declines(int64_t rows, int64_t k, int64_t n, bool b_nk) {
  constexpr int64_t kMinWeights = int64_t{1} << 15;
  if (rows == 0) return "no rows";
  if (rows == 1 && b_nk) return "one row against an n x k B: the gemv implementation's dot products read B as stored";
  if (rows > panel_product_max_rows())
    return str(rows, " rows: enough reuse of B for oneDNN's GEMM (panels take up to ", panel_product_max_rows(),
               " here)");
  if (k * n < kMinWeights) return str("B of ", k * n, " elements stays in cache (panels start at ", kMinWeights, ")");
  return "";
}

std::shared_ptr<const PanelsF32> cached_panels(const Tensor& b, bool nk) {
  const int64_t rows = b.dim(0), cols = b.dim(1);
  return std::static_pointer_cast<const PanelsF32>(cached_derived(b, nk ? "panels-nk" : "panels-kn", [&] {
    return std::static_pointer_cast<const void>(std::make_shared<const PanelsF32>(
        nk ? pack_panels_nk(b.data<float>(), rows, cols) : pack_panels_kn(b.data<float>(), rows, cols)));
  }));
}

namespace {

// A fresh PanelProductStep for constant input 1 in ctx.state: packed, held, activation parsed.
PanelProductStep& prepare_panel_product_step(KernelContext& ctx, bool nk, const char* op) {
  const Tensor& b = ctx.in(1);
  PanelProductStep& step = install_panel_step(ctx, cached_panels(b, nk), op);
  // B's elements in C order, read back from the panels.
  const int64_t rows = b.dim(0), cols = b.dim(1);
  ctx.held.push_back({1, [packed = step.packed, nk, rows, cols](void* dst) {
                        float* out = static_cast<float*>(dst);
                        const int64_t n = nk ? rows : cols, k = nk ? cols : rows;
                        for (int64_t j = 0; j < n; ++j) {
                          const float* column = packed->data() + (j / kPanel) * k * kPanel + j % kPanel;
                          for (int64_t q = 0; q < k; ++q) out[nk ? j * k + q : q * n + j] = column[q * kPanel];
                        }
                      }});
  return step;
}

}  // namespace

PanelProductStep& panel_product_step(KernelContext& ctx, bool nk, const char* op) {
  const Tensor& b = ctx.in(1);
  auto* step = static_cast<PanelProductStep*>(ctx.state.get());
  if (!step || !step->fits(b)) step = &prepare_panel_product_step(ctx, nk, op);
  step->weights_cached = constants_stay_cached(ctx.session_constant_bytes);
  return *step;
}

void dense_panel_product(const float* a, int64_t rows, int64_t k, const PanelProductStep& step, int64_t n,
                         const float* bias, float* y) {
  panel_product(a, rows, k, step.packed->data(), n, [&](int64_t o0, int64_t width, float* sums) {
    for (int64_t r = 0; r < rows; ++r) {
      float* s = sums + r * kPanel;
      if (bias)
        for (int64_t j = 0; j < width; ++j) s[j] += bias[o0 + j];
      activate_f32(step.act, s, width);
      std::copy_n(s, width, y + r * n + o0);
    }
  }, 0, step.weights_cached);
}

}  // namespace porta::cpu
