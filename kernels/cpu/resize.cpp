// Resize on cpu: the host plan (ops/resize_util.hpp) gives per axis the source indexes and
// weights of every output coordinate, with adjacent untouched axes merged. Output rows along
// the last axis run in parallel: per row, the combinations of the other axes' taps are listed
// once (offset, weight; zero weights dropped), then the row is a short dot product per element
// (or, when the last axis is untouched, a weighted sum of contiguous source rows).
//
// The common case of image models — only the last two axes resized (segmentation heads
// upsampling NCHW maps) — runs separably instead: per plane, each source row is interpolated
// along the last axis once, then every output row is a weighted sum of those rows. On
// lraspp_mobilenet_v3_large's 21x8x8 -> 21x64x64 bilinear upsampling that is ~4 multiply-adds
// per output spread over two contiguous passes instead of a per-element tap walk.
#include <algorithm>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "ops/resize_util.hpp"

namespace porta::cpu {
namespace {

// A: the accumulation type (double for f64, float otherwise).
template <typename T, typename A>
void resize_typed(const T* src, T* dst, const opdef::ResizePlan& p) {
  const int r = static_cast<int>(p.axes.size());
  const opdef::ResizePlan::Axis& last = p.axes[r - 1];
  const int64_t inner = last.out;
  int64_t rows = 1;
  for (int k = 0; k + 1 < r; ++k) rows *= p.axes[k].out;
  std::vector<A> w(p.weight.begin(), p.weight.end());
  const A extrap = static_cast<A>(p.extrapolation);
  const int64_t* index = p.index.data();
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    std::vector<int64_t> off, next_off, coord(static_cast<size_t>(r), 0);
    std::vector<A> ow, next_w, acc;
    for (int64_t row = b; row < e; ++row) {
      T* d = dst + row * inner;
      int64_t rest = row;
      for (int k = r - 2; k >= 0; --k) {
        coord[k] = rest % p.axes[k].out;
        rest /= p.axes[k].out;
      }
      off.assign(1, 0);
      ow.assign(1, A(1));
      bool outside = false;
      for (int k = 0; k + 1 < r; ++k) {
        const opdef::ResizePlan::Axis& ax = p.axes[k];
        if (ax.taps == 0) {
          for (int64_t& o : off) o += coord[k] * ax.in_stride;
          continue;
        }
        const int64_t base = ax.table_offset + coord[k] * ax.taps;
        if (index[base] < 0) {
          outside = true;
          break;
        }
        next_off.clear();
        next_w.clear();
        for (size_t i = 0; i < off.size(); ++i)
          for (int t = 0; t < ax.taps; ++t) {
            const A wt = w[base + t];
            if (wt == A(0)) continue;
            next_off.push_back(off[i] + index[base + t]);
            next_w.push_back(ow[i] * wt);
          }
        off.swap(next_off);
        ow.swap(next_w);
      }
      if (outside) {
        std::fill(d, d + inner, static_cast<T>(extrap));
        continue;
      }
      if (last.taps == 0) {  // untouched last axis: contiguous source rows
        acc.assign(static_cast<size_t>(inner), A(0));
        for (size_t c = 0; c < off.size(); ++c) {
          const T* s = src + off[c];
          const A wc = ow[c];
          A* a = acc.data();
          for (int64_t j = 0; j < inner; ++j) a[j] += wc * static_cast<A>(s[j]);
        }
        for (int64_t j = 0; j < inner; ++j) d[j] = static_cast<T>(acc[j]);
        continue;
      }
      const int taps = last.taps;
      for (int64_t j = 0; j < inner; ++j) {
        const int64_t base = last.table_offset + j * taps;
        if (index[base] < 0) {
          d[j] = static_cast<T>(extrap);
          continue;
        }
        A sum = 0;
        for (size_t c = 0; c < off.size(); ++c) {
          const T* s = src + off[c];
          A part = 0;
          for (int t = 0; t < taps; ++t) part += w[base + t] * static_cast<A>(s[index[base + t]]);
          sum += ow[c] * part;
        }
        d[j] = static_cast<T>(sum);
      }
    }
  });
}

// Separable path: plan axes [untouched...] [rows: taps > 0] [columns: taps > 0] without
// extrapolated outputs. `rows_in` and `cols_in` are X's last two dimensions.
bool separable_2d(const opdef::ResizePlan& p) {
  const size_t r = p.axes.size();
  if (r < 2 || p.axes[r - 1].taps == 0 || p.axes[r - 2].taps == 0) return false;
  for (size_t k = 0; k + 2 < r; ++k)
    if (p.axes[k].taps != 0) return false;
  for (size_t k = r - 2; k < r; ++k) {
    const auto& ax = p.axes[k];
    for (int64_t o = 0; o < ax.out; ++o)
      if (p.index[static_cast<size_t>(ax.table_offset + o * ax.taps)] < 0) return false;
  }
  return true;
}

// One source row interpolated along the columns: a[x] = sum_u w[x * taps + u] * s[i[x * taps + u]]
// (cloned for AVX-512/AVX2: the lambda below that calls it is compiled for baseline x86-64).
PORTA_CPU_CLONES void interpolate_columns(const float* s, float* a, int64_t out_w, int taps, const float* w,
                                          const int64_t* i) {
  if (taps == 2) {
    for (int64_t x = 0; x < out_w; ++x) a[x] = w[2 * x] * s[i[2 * x]] + w[2 * x + 1] * s[i[2 * x + 1]];
    return;
  }
  for (int64_t x = 0; x < out_w; ++x) {
    float v = 0;
    for (int u = 0; u < taps; ++u) v += w[x * taps + u] * s[i[x * taps + u]];
    a[x] = v;
  }
}

// out[x] = wy * a[x] (first tap) or out[x] += wy * a[x].
PORTA_CPU_CLONES void weighted_row(float* out, const float* a, float wy, int64_t n, bool first) {
  if (first) {
    for (int64_t x = 0; x < n; ++x) out[x] = wy * a[x];
  } else {
    for (int64_t x = 0; x < n; ++x) out[x] += wy * a[x];
  }
}

void resize_separable_f32(const float* src, float* dst, const opdef::ResizePlan& p, int64_t rows_in,
                          int64_t cols_in) {
  const size_t r = p.axes.size();
  const auto& rows = p.axes[r - 2];
  const auto& cols = p.axes[r - 1];
  const int64_t out_w = cols.out, out_h = rows.out;
  int64_t planes = 1;
  for (size_t k = 0; k + 2 < r; ++k) planes *= p.axes[k].out;
  const int64_t* ci = p.index.data() + cols.table_offset;
  const int64_t* ri = p.index.data() + rows.table_offset;
  std::vector<float> cw(p.weight.begin() + cols.table_offset, p.weight.begin() + cols.table_offset + out_w * cols.taps);
  std::vector<float> rw(p.weight.begin() + rows.table_offset, p.weight.begin() + rows.table_offset + out_h * rows.taps);
  // Work items: (plane, block of output rows), so one plane still spreads over threads.
  const int64_t row_block = std::max<int64_t>(1, std::min<int64_t>(out_h, 16384 / std::max<int64_t>(out_w, 1)));
  const int64_t blocks = (out_h + row_block - 1) / row_block;
  parallel_for(planes * blocks, 1, [&](int64_t b, int64_t e) {
    std::vector<float> across(static_cast<size_t>(rows_in * out_w));  // source rows, columns interpolated
    std::vector<uint8_t> done(static_cast<size_t>(rows_in));
    int64_t plane_done = -1;
    for (int64_t item = b; item < e; ++item) {
      const int64_t plane = item / blocks, y0 = (item % blocks) * row_block, y1 = std::min(out_h, y0 + row_block);
      // The plane's source offset from its untouched outer coordinates.
      int64_t off = 0, rest = plane;
      for (size_t k = r - 2; k-- > 0;) {
        off += (rest % p.axes[k].out) * p.axes[k].in_stride;
        rest /= p.axes[k].out;
      }
      if (plane != plane_done) {
        std::fill(done.begin(), done.end(), 0);
        plane_done = plane;
      }
      const float* s = src + off;
      float* d = dst + plane * out_h * out_w;
      for (int64_t y = y0; y < y1; ++y) {
        float* out = d + y * out_w;
        for (int t = 0; t < rows.taps; ++t) {
          const int64_t sy = ri[y * rows.taps + t] / cols_in;  // row indexes carry the row stride
          const float wy = rw[static_cast<size_t>(y * rows.taps + t)];
          float* a = across.data() + sy * out_w;
          if (!done[static_cast<size_t>(sy)]) {
            interpolate_columns(s + sy * cols_in, a, out_w, cols.taps, cw.data(), ci);
            done[static_cast<size_t>(sy)] = 1;
          }
          weighted_row(out, a, wy, out_w, t == 0);
        }
      }
    }
  });
}

void resize_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::ResizePlan p = opdef::resize_plan(ctx);
  // (the per-thread buffer of interpolated source rows is capped at 8 MiB)
  if (x.dtype() == DType::f32 && x.rank() >= 2 && x.dim(-2) * y.dim(-1) <= (int64_t{1} << 21) && separable_2d(p))
    return resize_separable_f32(x.data<float>(), y.data<float>(), p, x.dim(-2), x.dim(-1));
  switch (x.dtype()) {
    case DType::f32: resize_typed<float, float>(x.data<float>(), y.data<float>(), p); break;
    case DType::f64: resize_typed<double, double>(x.data<double>(), y.data<double>(), p); break;
    case DType::f16: resize_typed<Half, float>(x.data<Half>(), y.data<Half>(), p); break;
    case DType::bf16: resize_typed<BFloat16, float>(x.data<BFloat16>(), y.data<BFloat16>(), p); break;
    default: throw DTypeError(str("[Resize] expected X of a float dtype, got ", dtype_name(x.dtype())));
  }
}

}  // namespace

PORTA_REGISTER_KERNEL(Resize, cpu, kFloats, resize_cpu)

}  // namespace porta::cpu
