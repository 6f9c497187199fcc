// Resize on cpu: the host plan (ops/resize_util.hpp) gives per axis the source indexes and
// weights of every output coordinate, with adjacent untouched axes merged. Output rows along
// the last axis run in parallel: per row, the combinations of the other axes' taps are listed
// once (offset, weight; zero weights dropped), then the row is a short dot product per element
// (or, when the last axis is untouched, a weighted sum of contiguous source rows).
#include <algorithm>

#include "kernels/cpu/cpu_common.hpp"
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

void resize_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::ResizePlan p = opdef::resize_plan(ctx);
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
