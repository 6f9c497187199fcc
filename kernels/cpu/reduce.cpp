// ReduceSum/Mean/Max/Min on cpu. The reduced and kept dims are merged into runs; one reduced
// run between kept ones is read in place as [outer, reduced, inner] (inner == 1: SIMD row
// reductions; inner > 1: vector accumulation across rows). Other patterns are first permuted
// into [kept..., reduced...]. Floats accumulate in double, integers in int64.
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"
#include "ops/reduce_util.hpp"

namespace porta::cpu {
namespace {

using opdef::ReduceKind;

template <typename T>
using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;

template <typename T>
inline Acc<T> load(const T& v) {
  if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(v);
  else return to_double(v);
}

// Max/Min step that lets NaN win (PyTorch and ONNX Runtime propagate it).
template <ReduceKind K, typename A>
inline A pick(A acc, A v) {
  if constexpr (std::is_floating_point_v<A>)
    if (std::isnan(v) || std::isnan(acc)) return std::isnan(acc) ? acc : v;
  if constexpr (K == ReduceKind::max) return v > acc ? v : acc;
  else return v < acc ? v : acc;
}

template <ReduceKind K, typename T>
Acc<T> reduce_row(const T* x, int64_t n) {
  using A = Acc<T>;
  if constexpr (K == ReduceKind::sum || K == ReduceKind::mean) {
    A acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t i = 0; i < n; ++i) acc += load(x[i]);
    return acc;
  } else if constexpr (std::is_floating_point_v<A>) {
    // Vectorized max/min; NaN is tracked on the side so it still wins.
    A acc = load(x[0]);
    bool nan = false;
    if constexpr (K == ReduceKind::max) {
#pragma omp simd reduction(max : acc) reduction(|| : nan)
      for (int64_t i = 0; i < n; ++i) {
        A v = load(x[i]);
        nan = nan || v != v;
        acc = v > acc ? v : acc;
      }
    } else {
#pragma omp simd reduction(min : acc) reduction(|| : nan)
      for (int64_t i = 0; i < n; ++i) {
        A v = load(x[i]);
        nan = nan || v != v;
        acc = v < acc ? v : acc;
      }
    }
    return nan ? std::numeric_limits<A>::quiet_NaN() : acc;
  } else {
    A acc = load(x[0]);
    for (int64_t i = 1; i < n; ++i) acc = pick<K>(acc, load(x[i]));
    return acc;
  }
}

template <ReduceKind K, typename T>
T finish(Acc<T> acc, int64_t n) {
  if constexpr (K == ReduceKind::mean) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(acc / n);  // n > 0: checked by caller
    else return from_double<T>(n ? acc / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN());
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(acc);
  } else {
    return from_double<T>(acc);
  }
}

// x viewed as [outer, r, inner] (contiguous) -> y [outer, inner].
template <ReduceKind K, typename T>
void reduce_block(const T* x, T* y, int64_t outer, int64_t r, int64_t inner) {
  using A = Acc<T>;
  if (r == 0) {  // sum/mean of nothing (max/min were rejected before)
    for (int64_t i = 0; i < outer * inner; ++i) y[i] = finish<K, T>(A(0), 0);
    return;
  }
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, (1 << 14) / r), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        if constexpr (std::is_same_v<T, float> && (K == ReduceKind::max || K == ReduceKind::min)) {
          // f32 max/min rows in float vectors (the double loop with NaN tracking ran at ~35%
          // of the copy bandwidth); NaN still wins.
          y[o] = vmath::extreme_nan_f32(x + o * r, r, K == ReduceKind::max);
        } else {
          y[o] = finish<K, T>(reduce_row<K>(x + o * r, r), r);
        }
      }
    });
    return;
  }
  // Columns: each work item owns a chunk of `inner` (its accumulators stay in cache) and
  // walks all r rows of one outer slab; chunks are wide enough for long contiguous reads.
  int64_t threads = std::max(1, omp_get_max_threads());
  int64_t kChunk = std::clamp<int64_t>((inner + threads - 1) / threads, 256, 4096);
  int64_t chunks = (inner + kChunk - 1) / kChunk;
  // f32 max/min accumulate in float (exact: they pick an element) with a NaN flag per column,
  // branch-free so the row updates vectorize; through double with NaN checks they did not
  // (4096x4096 columns 6.4 -> 3.7 ms). Everything else accumulates in Acc<T>.
  constexpr bool kFloatExtreme = std::is_same_v<T, float> && (K == ReduceKind::max || K == ReduceKind::min);
  using C = std::conditional_t<kFloatExtreme, float, A>;
  parallel_for(outer * chunks, 1, [&](int64_t b, int64_t e) {
    std::vector<C> acc(static_cast<size_t>(kChunk));
    std::vector<int32_t> nan(kFloatExtreme ? static_cast<size_t>(kChunk) : 0);
    for (int64_t w = b; w < e; ++w) {
      int64_t o = w / chunks, i0 = (w % chunks) * kChunk, n = std::min(kChunk, inner - i0);
      const T* base = x + o * r * inner + i0;
      T* out = y + o * inner + i0;
      C* __restrict a = acc.data();
      if constexpr (kFloatExtreme) {
        int32_t* __restrict f = nan.data();
        for (int64_t i = 0; i < n; ++i) a[i] = base[i], f[i] = base[i] != base[i];
        for (int64_t k = 1; k < r; ++k) {
          const float* __restrict row = base + k * inner;
#pragma omp simd
          for (int64_t i = 0; i < n; ++i) {
            float v = row[i];
            f[i] |= v != v;
            a[i] = K == ReduceKind::max ? (v > a[i] ? v : a[i]) : (v < a[i] ? v : a[i]);
          }
        }
        for (int64_t i = 0; i < n; ++i) out[i] = f[i] ? std::numeric_limits<float>::quiet_NaN() : a[i];
      } else {
        for (int64_t i = 0; i < n; ++i) a[i] = load(base[i]);
        for (int64_t k = 1; k < r; ++k) {
          const T* row = base + k * inner;
          if constexpr (K == ReduceKind::sum || K == ReduceKind::mean) {
#pragma omp simd
            for (int64_t i = 0; i < n; ++i) a[i] += load(row[i]);
          } else {
            for (int64_t i = 0; i < n; ++i) a[i] = pick<K>(a[i], load(row[i]));
          }
        }
        for (int64_t i = 0; i < n; ++i) out[i] = finish<K, T>(a[i], r);
      }
    }
  });
}

template <ReduceKind K>
void reduce_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> axes = opdef::reduce_axes_of(ctx);
  opdef::check_reduce_nonempty(K, x.shape(), axes, y.numel(), ctx.op->name);
  if (y.numel() == 0) return;
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : axes) reduced[a] = true;
  opdef::check_integer_mean_nonempty(K, x.dtype(), x.shape(), ctx.op->name);
  // Merge dims into alternating kept/reduced runs, skipping size-1 dims.
  std::vector<std::pair<int64_t, bool>> runs;
  for (int i = 0; i < x.rank(); ++i) {
    int64_t d = x.shape()[i];
    if (d == 1) continue;
    if (!runs.empty() && runs.back().second == reduced[i]) runs.back().first *= d;
    else runs.push_back({d, reduced[i]});
  }
  int n_reduced_runs = 0;
  for (auto& r : runs) n_reduced_runs += r.second;
  int64_t outer = 1, r = 1, inner = 1;
  Tensor src = x;
  if (n_reduced_runs <= 1) {
    bool seen = false;
    for (auto& [d, red] : runs) {
      if (red) r = d, seen = true;
      else (seen ? inner : outer) *= d;
    }
  } else {
    // Bring kept axes first, reduced last, then reduce rows.
    std::vector<int> perm;
    for (int i = 0; i < x.rank(); ++i)
      if (!reduced[i]) perm.push_back(i), outer *= x.shape()[i];
    for (int i = 0; i < x.rank(); ++i)
      if (reduced[i]) perm.push_back(i), r *= x.shape()[i];
    Tensor view = x.permute(perm);
    src = Tensor::empty(view.shape(), x.dtype());
    copy_strided(view, src);
  }
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      throw DTypeError(str("[", ctx.op->name, "] expected a float, i64 or i32 input, got ", dtype_name(x.dtype())));
    } else {
      reduce_block<K, T>(src.data<T>(), y.data<T>(), outer, r, inner);
    }
  });
}

constexpr DTypeSet kReduceTypes = kFloats | kI64 | kI32;

}  // namespace

PORTA_REGISTER_KERNEL(ReduceSum, cpu, kReduceTypes, reduce_cpu<ReduceKind::sum>)
PORTA_REGISTER_KERNEL(ReduceMean, cpu, kReduceTypes, reduce_cpu<ReduceKind::mean>)
PORTA_REGISTER_KERNEL(ReduceMax, cpu, kReduceTypes, reduce_cpu<ReduceKind::max>)
PORTA_REGISTER_KERNEL(ReduceMin, cpu, kReduceTypes, reduce_cpu<ReduceKind::min>)

}  // namespace porta::cpu
