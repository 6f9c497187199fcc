// porta gpu kernels — ArgMax and ArgMin (any axis, keepdims, select_last_index), with the
// semantics of ops/argmax.cpp: the first extreme on ties (the last with select_last_index),
// NaN counts as the extreme. The input is viewed as [outer, n, inner]:
//  - inner == 1: one block per row, each thread scans a strided part of the row, then the
//    block combines (value, index) candidates in shared memory;
//  - inner > 1: one thread per output, scanning its column (adjacent threads read adjacent
//    addresses).
// Both use one rule, `replaces`, which is what a left-to-right scan would decide, so the
// result does not depend on how the row was split.
#include "kernels/cuda/block_reduce.cuh"
#include "ops/common.hpp"
#include "ops/reduce_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

// Whether candidate (v, iv) replaces the current best (b, ib); ib < 0 means "none yet".
template <bool Max, typename A>
__device__ __forceinline__ bool replaces(A v, int64_t iv, A b, int64_t ib, bool last) {
  if (iv < 0) return false;
  if (ib < 0) return true;
  const bool later = iv > ib;
  if constexpr (!std::is_integral_v<A>) {
    const bool v_nan = v != v, b_nan = b != b;
    if (v_nan && b_nan) return last == later;
    if (b_nan) return false;
    if (v_nan) return true;
  }
  if (v == b) return last == later;
  return Max ? v > b : v < b;
}

template <typename T, bool Max>
__global__ void __launch_bounds__(kRowThreads)
    arg_rows(const T* x, int64_t* y, int64_t rows, int64_t n, bool last) {
  using A = acc_t<T>;
  PORTA_SHARED(A, best_value, [kRowThreads]);
  PORTA_SHARED(int64_t, best_index, [kRowThreads]);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* px = x + row * n;
    A b = A(0);
    int64_t ib = -1;
    for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
      const A v = load_acc<T>(px[k]);
      if (replaces<Max>(v, k, b, ib, last)) b = v, ib = k;
    }
    best_value[threadIdx.x] = b;
    best_index[threadIdx.x] = ib;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
      if (threadIdx.x < half) {
        const int other = threadIdx.x + half;
        if (replaces<Max>(best_value[other], best_index[other], best_value[threadIdx.x],
                          best_index[threadIdx.x], last)) {
          best_value[threadIdx.x] = best_value[other];
          best_index[threadIdx.x] = best_index[other];
        }
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) y[row] = best_index[0];
    __syncthreads();  // the next row reuses the shared arrays
  }
}

template <typename T, bool Max>
__global__ void arg_columns(const T* x, int64_t* y, int64_t total, int64_t n, int64_t inner,
                            bool last) {
  using A = acc_t<T>;
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < total; w += step) {
    const T* base = x + (w / inner) * n * inner + w % inner;
    A b = load_acc<T>(base[0]);
    int64_t ib = 0;
    for (int64_t k = 1; k < n; ++k) {
      const A v = load_acc<T>(base[k * inner]);
      if (replaces<Max>(v, k, b, ib, last)) b = v, ib = k;
    }
    y[w] = ib;
  }
}

constexpr DTypeSet kArgTypes = kFloats | kI64 | kI32 | kI8 | kU8;

template <bool Max>
void arg_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  if (x.rank() == 0) {  // the index of a scalar is 0
    PORTA_GPU_CHECK(device, cudaMemsetAsync(device_ptr<int64_t>(y), 0, sizeof(int64_t), s));
    return;
  }
  const bool last = ctx.attrs->get_int("select_last_index") != 0;
  const int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), ctx.op->name);
  int64_t outer = 1, n = x.shape()[axis], inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  opdef::check_reduce_nonempty(opdef::ReduceKind::max, x.shape(), {axis}, outer * inner, ctx.op->name);
  const int64_t total = outer * inner;
  if (total == 0) return;
  visit_gpu_dtype_in<kArgTypes>(x.dtype(), ctx.op->name, [&](auto tag) {
    using T = decltype(tag);
    if (inner == 1) {
      const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(outer, 65535));
      launch<arg_rows<T, Max>>(blocks, kRowThreads, 0, s, device_ptr<const T>(x), device_ptr<int64_t>(y),
                                                      outer, n, last);
      PORTA_GPU_CHECK_LAUNCH(device, "arg_rows");
    } else {
      launch<arg_columns<T, Max>>(grid_for(total, 256, device), 256, 0, s,
          device_ptr<const T>(x), device_ptr<int64_t>(y), total, n, inner, last);
      PORTA_GPU_CHECK_LAUNCH(device, "arg_columns");
    }
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(ArgMax, kArgTypes, arg_gpu<true>)
PORTA_REGISTER_GPU_KERNEL(ArgMin, kArgTypes, arg_gpu<false>)

}  // namespace porta::PORTA_GPU_NS
