// Grouped Conv on cpu ("grouped"): 2-D convs whose groups have a multiple of 8 output
// channels (ResNeXt's and RegNet's 3x3 convs: 8-32 channels per group). oneDNN 2.6's direct
// kernels run such a conv group by group with a block of 8 output channels and a row of output
// pixels per inner loop, and over the small maps of real models at small images they reach a
// fraction of the FMA rate (an AVX2 Zen 3 at one thread: regnet_y_400mf's 104-channel conv in
// 13 groups over 8x8, 0.96 MFLOP, 32-41 us = 23-30 GFLOP/s; its 440-channel one over 2x2, 12
// GFLOP/s; resnext50's 32 groups of 32 over 2x2, 18 GFLOP/s).
//
// Each call first copies the input into planes: per image, group and run of 8 of its input
// channels (zeros past the last), per stride phase (the rows and columns of the padded input
// congruent modulo the stride), the plane's pixels with their 8 channels side by side, and
// zeros where the padding is. Every output pixel then reads, for every tap, the pixel of one
// plane at the same offset from its own position as its neighbours do: a block of R output
// rows x Q columns reads R rows of Q consecutive pixels, at offsets fixed at compile time from
// one pointer per row. Strides, dilations and pads only decide the planes and each tap's
// offset; the taps that read only padding for every output pixel are left out.
//
// The weights are packed once per session, per group, as rows (tap, input channel) of the
// group's output channels (zero rows past the group's input channels to whole runs). A block
// keeps its sums for a chunk of up to four vectors of one group's output channels in
// registers: per input channel of a tap, one vector load per chunk vector and one broadcast per
// pixel. The bias, a fused residual and the fused activation are applied before the store, in
// either of the layouts a session keeps activations in.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/conv_common.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/fused_activation.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "kernels/cpu/thread_policy.hpp"
#include "kernels/cpu/vector_width.hpp"
#include "ops/window.hpp"

namespace porta::cpu {

// One block's product: R output rows x Q output columns of one group, one chunk of its output
// channels.
struct GroupedBlock {
  const float* planes;   // the block's first output pixel's place in the planes of tap offset 0
  const int64_t* taps;         // per kept tap: its offset in the planes (floats)
  const int64_t* rows_of_tap;  // per kept tap: the offset of its weight rows
  int64_t kept;          // kept taps
  int64_t runs;          // runs of 8 input channels
  int64_t run_stride;    // floats between two runs' planes
  int64_t row_stride;    // floats between two rows of a plane
  const float* weights;  // the group's packed rows, at the chunk's first channel
  int64_t ocg;           // floats between two weight rows
  float* sums;           // the sums of row r, column q at (r * Q + q) * ld
  int64_t ld;
};

void grouped_block(int vb, int nv, int q, int r, const GroupedBlock& b);

namespace {

#define PORTA_GROUPED_INLINE inline __attribute__((always_inline))

/// Output channels per group the kernel takes a multiple of: one AVX2 vector.
constexpr int64_t kGroupStep = 8;
/// Vectors of one group's output channels whose sums a block keeps at most (a chunk).
constexpr int kMaxChunkVectors = 4;
/// Input channels side by side in a plane's pixel (padded with zeros to a whole run).
constexpr int kRun = 8;
/// Sums a block keeps in registers at most: 12 of the 16 vector registers of AVX2 (one more
/// per chunk vector for the weights, one for the broadcast).
constexpr int kMaxSums = 12;
/// Output rows a block spans at most (a pointer each).
constexpr int kMaxBlockRows = 4;
/// Multiply-adds (x2) from which a call splits over the threads of its budget.
constexpr double kParallelFlops = 2e5;

// sums of the block's R x Q pixels, NV vectors of VB bytes each.
template <int VB, int NV, int R, int Q>
PORTA_GROUPED_INLINE void block_sums(const GroupedBlock& b) {
  using V = typename VecOf<float, VB>::type;
  constexpr int kLanes = VB / 4;
  V acc[R][Q][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int q = 0; q < Q; ++q)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][q][v] = V{};
  for (int64_t i = 0; i < b.kept; ++i) {
    const float* at = b.planes + b.taps[i];
    const float* w = b.weights + b.rows_of_tap[i];
    for (int64_t run = 0; run < b.runs; ++run, at += b.run_stride) {
      const float* row[R];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) row[r] = at + r * b.row_stride;
#pragma GCC unroll 8
      for (int c = 0; c < kRun; ++c, w += b.ocg) {
        V wv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) std::memcpy(&wv[v], w + v * kLanes, VB);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
          for (int q = 0; q < Q; ++q) {
            const float x = row[r][q * kRun + c];  // scalar * vector: a broadcast from memory
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) acc[r][q][v] += x * wv[v];
          }
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 12
    for (int q = 0; q < Q; ++q)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) std::memcpy(b.sums + (r * Q + q) * b.ld + v * kLanes, &acc[r][q][v], VB);
}

// The block columns Q a chunk of NV vectors takes: 8, 4, 2 or 1 as sums allow.
template <int NV>
inline constexpr int kMaxColumns = kMaxSums / NV >= 8 ? 8 : kMaxSums / NV >= 4 ? 4 : kMaxSums / NV >= 2 ? 2 : 1;
// The rows for Q columns: as many as the sums allow, up to kMaxBlockRows.
template <int NV, int Q>
inline constexpr int kMaxRows = std::min(kMaxBlockRows, kMaxSums / (NV * Q));

template <int VB, int NV, int Q, int R>
PORTA_GROUPED_INLINE void rows_dispatch(int r, const GroupedBlock& b) {
  if constexpr (R > 1)
    if (r < R) return rows_dispatch<VB, NV, Q, R - 1>(r, b);
  block_sums<VB, NV, R, Q>(b);
}

template <int VB, int NV, int Q>
PORTA_GROUPED_INLINE void columns_dispatch(int q, int r, const GroupedBlock& b) {
  if constexpr (Q > 1)
    if (q < Q) return columns_dispatch<VB, NV, Q / 2>(q, r, b);
  if constexpr (kMaxRows<NV, Q> >= 1) rows_dispatch<VB, NV, Q, kMaxRows<NV, Q>>(r, b);
}

template <int VB>
PORTA_GROUPED_INLINE void chunk_dispatch(int nv, int q, int r, const GroupedBlock& b) {
  switch (nv) {
    case 1: return columns_dispatch<VB, 1, kMaxColumns<1>>(q, r, b);
    case 2: return columns_dispatch<VB, 2, kMaxColumns<2>>(q, r, b);
    case 3: return columns_dispatch<VB, 3, kMaxColumns<3>>(q, r, b);
    default: return columns_dispatch<VB, 4, kMaxColumns<4>>(q, r, b);
  }
}

}  // namespace

// The sums of one block: q columns (a power of two up to the chunk's kMaxColumns), r rows (up
// to kMaxRows for them), nv vectors of vb bytes.
PORTA_CPU_CLONES
void grouped_block(int vb, int nv, int q, int r, const GroupedBlock& b) {
  switch (vb) {
    case 64: return chunk_dispatch<64>(nv, q, r, b);
    case 32: return chunk_dispatch<32>(nv, q, r, b);
    default: return chunk_dispatch<16>(nv, q, r, b);
  }
}

namespace {

int max_columns(int nv) {
  switch (nv) {
    case 1: return kMaxColumns<1>;
    case 2: return kMaxColumns<2>;
    case 3: return kMaxColumns<3>;
    default: return kMaxColumns<4>;
  }
}

int max_rows(int nv, int q) { return std::min(kMaxBlockRows, kMaxSums / (nv * q)); }

struct Geometry {
  opdef::WindowGeometry g;
  int64_t batch = 0, channels = 0, out_channels = 0, groups = 0, icg = 0, ocg = 0, taps = 0;
};

Geometry geometry_of(const KernelContext& ctx) {
  const Shape &x = ctx.in(0).shape(), &w = ctx.in(1).shape();
  Geometry r;
  r.g = opdef::window_geometry("Conv", x, std::vector<int64_t>(w.begin() + 2, w.end()), *ctx.attrs);
  r.batch = x[0];
  r.channels = x[1];
  r.out_channels = w[0];
  r.groups = ctx.attrs->get_int("group");
  r.icg = w[1];
  r.ocg = r.groups > 0 ? w[0] / r.groups : 0;
  r.taps = shape_numel(r.g.kernel);
  return r;
}

std::string grouped_supports(const KernelContext& ctx) {
  if (ctx.attrs->get_int("porta_compute", 0) > 1)
    return "computes in a low format: the onednn implementation converts inside its primitive";
  if (ctx.attrs->get_int("group") == 1) return "not a grouped conv";
  if (ctx.in(0).rank() != 4) return str("input of rank ", ctx.in(0).rank(), " (the kernel takes 2-D convs)");
  if (!ctx.is_constant_input(1)) return "weights are not a session constant (they are packed once per session)";
  const Geometry geo = geometry_of(ctx);
  if (geo.ocg % kGroupStep != 0)
    return str(geo.ocg, " output channels per group: the kernel takes multiples of ", kGroupStep);
  if (geo.batch * shape_numel(geo.g.out) == 0) return "empty conv: the onednn implementation takes it";
  return "";
}

int64_t runs_of(const Geometry& geo) { return (geo.icg + kRun - 1) / kRun; }

// The weights of group g as rows (tap, input channel) of its ocg output channels, groups one
// after the other, each tap's rows padded with zero rows to whole runs of input channels:
// packed[((g * taps + t) * icp + c) * ocg + o] = w[g * ocg + o][c][t]. fn(packed index, w
// index) for every weight.
template <class Fn>
void for_each_packed(const Geometry& geo, Fn&& fn) {
  const int64_t icp = runs_of(geo) * kRun;
  for (int64_t g = 0; g < geo.groups; ++g)
    for (int64_t o = 0; o < geo.ocg; ++o)
      for (int64_t c = 0; c < geo.icg; ++c)
        for (int64_t t = 0; t < geo.taps; ++t)
          fn(static_cast<size_t>(((g * geo.taps + t) * icp + c) * geo.ocg + o), ((g * geo.ocg + o) * geo.icg + c) * geo.taps + t);
}

std::vector<float> pack_groups(const Tensor& w, const Geometry& geo) {
  std::vector<float> packed(static_cast<size_t>(geo.groups * geo.taps * runs_of(geo) * kRun * geo.ocg), 0.0f);
  const float* src = w.data<float>();
  for_each_packed(geo, [&](size_t at, int64_t from) { packed[at] = src[from]; });
  return packed;
}

// What a session step keeps between calls (KernelContext::state): the geometry, the packed
// weights, the planes' shape, each kept tap's offset, and the block shape.
struct GroupedStep {
  Shape x_shape;
  const void* storage = nullptr;
  int64_t offset = 0;
  Geometry geo;
  std::shared_ptr<const std::vector<float>> packed;
  int vb = 0, nv = 0;                         // vector bytes, vectors per chunk but the last
  int64_t vectors = 0, lanes = 0;             // of a group's output channels
  int64_t cols = 0, rows = 0;                 // block columns and rows (the last row block may have fewer)
  int64_t col_blocks = 0, row_blocks = 0;     // per image
  int64_t phases_h = 0, phases_w = 0;         // the strides
  int64_t plane_h = 0, plane_w = 0;           // one plane's rows and pixels per row
  int64_t plane = 0, run_stride = 0, group_stride = 0;  // floats
  std::vector<int64_t> tap_offset, tap_rows;  // per kept tap: in the planes, in the weights
  std::vector<int64_t> col_offset;  // per input column: its place in a run's planes
  ConvLayouts layouts;
  opdef::FusedActivation act;

  // The weights told apart by storage and offset: a session may have released their bytes
  // (KernelContext::held).
  bool fits(const Tensor& x, const Tensor& w) const {
    return x.shape() == x_shape && w.storage().get() == storage && w.offset() == offset;
  }
};

std::shared_ptr<GroupedStep> prepare(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  auto st = std::make_shared<GroupedStep>();
  st->x_shape = x.shape();
  st->storage = w.storage().get();
  st->offset = w.offset();
  st->geo = geometry_of(ctx);
  const Geometry& geo = st->geo;
  const opdef::WindowGeometry& g = geo.g;
  st->packed = std::static_pointer_cast<const std::vector<float>>(cached_derived(w, "conv-grouped", [&] {
    return std::static_pointer_cast<const void>(std::make_shared<const std::vector<float>>(pack_groups(w, geo)));
  }));
  // Vectors: 16 lanes where the CPU has them and the groups are a multiple of 16, else 8
  // (AVX2, or AVX-512 with 8-channel groups: its ymm half), 4 on the baseline.
  const int widest = vector_bytes();
  st->vb = widest >= 64 && geo.ocg % 16 == 0 ? 64 : std::min(widest, 32);
  st->lanes = st->vb / 4;
  st->vectors = geo.ocg / st->lanes;
  // The block shape for chunks of nv vectors: columns the power of two up to the chunk's most
  // that computes the fewest columns past the output's width (the larger on a tie), rows as the
  // sums allow.
  const int64_t ow = g.out[1], oh = g.out[0];
  struct Shape2 {
    int nv;
    int64_t cols, rows, blocks;
  };
  auto shape_for = [&](int nv) {
    int64_t best = 0;
    for (int64_t q = max_columns(nv); q >= 1; q /= 2) {
      const int64_t computed = (ow + q - 1) / q * q;
      if (best == 0 || computed < (ow + best - 1) / best * best) best = q;
    }
    const int64_t rows = std::min<int64_t>(oh, max_rows(nv, static_cast<int>(best)));
    return Shape2{nv, best, rows, ((ow + best - 1) / best) * ((oh + rows - 1) / rows)};
  };
  // Chunks as wide as the registers allow, unless narrower ones take the map in fewer blocks
  // (each block reads the group's weights once: resnext50's 32 channels per group over 2x2
  // read them twice in blocks of one row), keeping at least 8 sums in flight.
  const int64_t chunks = (st->vectors + kMaxChunkVectors - 1) / kMaxChunkVectors;
  Shape2 chosen = shape_for(static_cast<int>((st->vectors + chunks - 1) / chunks));
  for (int nv = chosen.nv - 1; nv >= 1; --nv) {
    const Shape2 narrower = shape_for(nv);
    const int64_t fewer = std::min(narrower.cols, ow) * narrower.rows * nv;
    if (narrower.blocks < chosen.blocks && fewer >= 8) chosen = narrower;
  }
  st->nv = chosen.nv;
  st->cols = chosen.cols;
  st->rows = chosen.rows;
  st->col_blocks = (ow + st->cols - 1) / st->cols;
  st->row_blocks = (oh + st->rows - 1) / st->rows;
  // The planes: the padded input's rows and columns by stride phase, wide enough for every
  // computed column's every tap.
  st->phases_h = g.strides[0];
  st->phases_w = g.strides[1];
  const int64_t need_h = (oh - 1) * g.strides[0] + (g.kernel[0] - 1) * g.dilations[0] + 1;
  const int64_t need_w = (st->col_blocks * st->cols - 1) * g.strides[1] + (g.kernel[1] - 1) * g.dilations[1] + 1;
  st->plane_h = (std::max(need_h, g.pad_begin[0] + g.in[0]) + st->phases_h - 1) / st->phases_h;
  st->plane_w = (std::max(need_w, g.pad_begin[1] + g.in[1]) + st->phases_w - 1) / st->phases_w;
  st->plane = st->plane_h * st->plane_w * kRun;
  st->run_stride = st->phases_h * st->phases_w * st->plane;
  st->group_stride = runs_of(geo) * st->run_stride;
  for (int64_t iw = 0; iw < g.in[1]; ++iw) {
    const int64_t pw = iw + g.pad_begin[1];
    st->col_offset.push_back((pw % st->phases_w) * st->plane + (pw / st->phases_w) * kRun);
  }
  // The kept taps: those some output pixel reads inside the input with.
  const int64_t icp = runs_of(geo) * kRun;
  for (int64_t kh = 0; kh < g.kernel[0]; ++kh)
    for (int64_t kw = 0; kw < g.kernel[1]; ++kw) {
      bool rows_inside = false, cols_inside = false;
      for (int64_t o = 0; o < oh && !rows_inside; ++o) {
        const int64_t i = o * g.strides[0] - g.pad_begin[0] + kh * g.dilations[0];
        rows_inside = i >= 0 && i < g.in[0];
      }
      for (int64_t o = 0; o < ow && !cols_inside; ++o) {
        const int64_t i = o * g.strides[1] - g.pad_begin[1] + kw * g.dilations[1];
        cols_inside = i >= 0 && i < g.in[1];
      }
      if (!rows_inside || !cols_inside) continue;
      const int64_t dh = kh * g.dilations[0], dw = kw * g.dilations[1];
      const int64_t phase = (dh % st->phases_h) * st->phases_w + dw % st->phases_w;
      st->tap_offset.push_back(phase * st->plane + ((dh / st->phases_h) * st->plane_w + dw / st->phases_w) * kRun);
      st->tap_rows.push_back((kh * g.kernel[1] + kw) * icp * geo.ocg);
    }
  st->layouts = conv_layouts(ctx);
  st->act = opdef::parse_fused_activation(*ctx.attrs);
  return st;
}

// The planes of the (image, group) pairs ng0..ng1 (ng = image * groups + group; a pair's
// planes are group_stride floats from ng * group_stride): zeros, then the input's pixels,
// read from x in its layout row by row.
void fill_planes(const GroupedStep& st, const float* x, int64_t ng0, int64_t ng1, float* planes) {
  const Geometry& geo = st.geo;
  const int64_t H = geo.g.in[0], W = geo.g.in[1], C = geo.channels, pixels = H * W, icg = geo.icg;
  const int64_t line = st.plane_w * kRun;  // floats of one plane row
  const int64_t* col_at = st.col_offset.data();
  std::fill(planes + ng0 * st.group_stride, planes + ng1 * st.group_stride, 0.0f);
  for (int64_t ng = ng0; ng < ng1;) {
    const int64_t n = ng / geo.groups, g0 = ng % geo.groups, g1 = std::min(geo.groups, g0 + (ng1 - ng));
    float* image = planes + n * geo.groups * st.group_stride;
    for (int64_t p = 0; p < st.phases_h * st.plane_h; ++p) {
      const int64_t phase = p % st.phases_h, hq = p / st.phases_h, ih = p - geo.g.pad_begin[0];
      if (ih < 0 || ih >= H) continue;
      const int64_t row = phase * st.phases_w * st.plane + hq * line;  // in a run's planes
      if (st.layouts.x_last) {
        const int64_t whole = icg / kRun, rest = icg % kRun;
        for (int64_t iw = 0; iw < W; ++iw) {
          const float* from = x + (n * pixels + ih * W + iw) * C + g0 * icg;
          for (int64_t gr = g0; gr < g1; ++gr) {
            float* to = image + gr * st.group_stride + row + col_at[iw];
            for (int64_t r = 0; r < whole; ++r, from += kRun)
              std::memcpy(to + r * st.run_stride, from, kRun * sizeof(float));
            if (rest) {
              std::memcpy(to + whole * st.run_stride, from, static_cast<size_t>(rest) * sizeof(float));
              from += rest;
            }
          }
        }
        continue;
      }
      for (int64_t c = g0 * icg; c < g1 * icg; ++c) {
        const float* from = x + ((n * C + c) * H + ih) * W;
        const int64_t gr = c / icg, within = c % icg;
        float* to = image + gr * st.group_stride + (within / kRun) * st.run_stride + row + within % kRun;
        for (int64_t iw = 0; iw < W; ++iw) to[col_at[iw]] = from[iw];
      }
    }
    ng += g1 - g0;
  }
}

void conv_grouped(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  auto* step = static_cast<GroupedStep*>(ctx.state.get());
  std::shared_ptr<GroupedStep> fresh;
  if (!step || !step->fits(x, w)) {
    fresh = prepare(ctx);
    step = fresh.get();
    if (ctx.is_constant_input(1)) {
      ctx.state = fresh;
      // The packed weights hold w in full: the session may release w's bytes, and they are
      // rebuilt from the packed rows when asked.
      ctx.held.clear();
      ctx.held.push_back({1, [packed = fresh->packed, geo = fresh->geo](void* dst) {
                            float* out = static_cast<float*>(dst);
                            for_each_packed(geo, [&](size_t at, int64_t to) { out[to] = (*packed)[at]; });
                          }});
    }
  }
  const GroupedStep& st = *step;
  const Geometry& geo = st.geo;
  const int64_t OC = geo.out_channels, ocg = geo.ocg, oh = geo.g.out[0], ow = geo.g.out[1], pixels = oh * ow;

  const float* xd = x.data<float>();
  const float* bias = ctx.has_input(2) ? ctx.in(2).data<float>() : nullptr;
  const float* rd = ctx.has_input(3) ? ctx.in(3).data<float>() : nullptr;
  float* yd = y.data<float>();
  const opdef::FusedActivation& act = st.act;
  const float* packed = st.packed->data();
  const int64_t blocks = st.row_blocks * st.col_blocks, runs = runs_of(geo);

  // Threads: the call's budget from kParallelFlops (times parallel_scale()), below the call
  // thresholds, which these convs' few bytes and flops stay under (thread_policy.hpp).
  const double flops = 2.0 * static_cast<double>(geo.batch * pixels * OC * geo.icg * geo.taps);
  ThreadScope wider(flops >= kParallelFlops * parallel_scale() ? call_thread_budget() : omp_get_max_threads());

  // Each thread takes a run of (image, group) pairs: it fills their planes, then computes
  // their blocks, so the planes it reads are the ones it wrote (in its own core's cache), and
  // its share of the weights stays there too. One parallel region per call.
  thread_local std::vector<float> planes_buffer;
  planes_buffer.resize(static_cast<size_t>(geo.batch * geo.groups * st.group_stride));
  float* const planes = planes_buffer.data();  // the calling thread's, by pointer
  parallel_for(geo.batch * geo.groups, 1, [&](int64_t ng0, int64_t ng1) {
    fill_planes(st, xd, ng0, ng1, planes);
    alignas(64) float sums[kMaxSums * 16];
    for (int64_t i = ng0 * blocks; i < ng1 * blocks; ++i) {
      const int64_t blk = i % blocks, ng = i / blocks, gr = ng % geo.groups, n = ng / geo.groups;
      const int64_t rb = blk / st.col_blocks, cb = blk % st.col_blocks;
      const int64_t oh0 = rb * st.rows, ow0 = cb * st.cols;
      const int64_t nrows = std::min<int64_t>(st.rows, oh - oh0), ncols = std::min<int64_t>(st.cols, ow - ow0);
      const float* at = planes + ng * st.group_stride + (oh0 * st.plane_w + ow0) * kRun;
      for (int64_t v0 = 0; v0 < st.vectors; v0 += st.nv) {
        const int64_t nvc = std::min<int64_t>(st.nv, st.vectors - v0), c0 = v0 * st.lanes, width = nvc * st.lanes;
        GroupedBlock b{at,
                       st.tap_offset.data(),
                       st.tap_rows.data(),
                       static_cast<int64_t>(st.tap_offset.size()),
                       runs,
                       st.run_stride,
                       st.plane_w * kRun,
                       packed + gr * geo.taps * runs * kRun * ocg + c0,
                       ocg,
                       sums,
                       width};
        grouped_block(st.vb, static_cast<int>(nvc), static_cast<int>(st.cols), static_cast<int>(nrows), b);
        const int64_t o0 = gr * ocg + c0;
        for (int64_t r = 0; r < nrows; ++r)
          for (int64_t q = 0; q < ncols; ++q) {
            float* s = sums + (r * st.cols + q) * width;
            const int64_t px = (oh0 + r) * ow + ow0 + q;
            if (bias)
              for (int64_t j = 0; j < width; ++j) s[j] += bias[o0 + j];
            if (rd) {
              if (st.layouts.r_last)
                for (int64_t j = 0; j < width; ++j) s[j] += rd[(n * pixels + px) * OC + o0 + j];
              else
                for (int64_t j = 0; j < width; ++j) s[j] += rd[(n * OC + o0 + j) * pixels + px];
            }
          }
        activate_f32(act, sums, nrows * st.cols * width);
        for (int64_t r = 0; r < nrows; ++r)
          for (int64_t q = 0; q < ncols; ++q) {
            const float* s = sums + (r * st.cols + q) * width;
            const int64_t px = (oh0 + r) * ow + ow0 + q;
            if (st.layouts.y_last) std::copy_n(s, width, yd + (n * pixels + px) * OC + o0);
            else
              for (int64_t j = 0; j < width; ++j) yd[(n * OC + o0 + j) * pixels + px] = s[j];
          }
      }
    }
  });
}

const bool grouped_registered = register_kernel_at_load([] {
  KernelDef k = conv_kernel_def();
  k.impl = {"grouped", 2};
  k.fn = conv_grouped;
  k.supports = grouped_supports;
  return k;
}());

}  // namespace
}  // namespace porta::cpu
