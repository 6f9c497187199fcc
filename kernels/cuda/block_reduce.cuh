// porta gpu kernels — block-wide reductions for row kernels (softmax, normalization).
// Built from warp shuffles whose width is the device's warpSize (32 or 64), never a constant.
#pragma once
#include "kernels/cuda/gpu_kernel.hpp"
#include "kernels/cuda/shared_memory.cuh"

namespace porta::PORTA_GPU_NS {

/// Threads per block of the row kernels: a multiple of both 32 and 64.
inline constexpr int kRowThreads = 256;

struct SumOp {
  template <typename A>
  __device__ A combine(A a, A b) const { return a + b; }
};
// Max and Min propagate NaN (as PyTorch's reductions): a NaN operand wins.
struct MaxOp {
  template <typename A>
  __device__ A combine(A a, A b) const {
    if constexpr (!std::is_integral_v<A>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return b > a ? b : a;
  }
};
struct MinOp {
  template <typename A>
  __device__ A combine(A a, A b) const {
    if constexpr (!std::is_integral_v<A>) {
      if (a != a) return a;
      if (b != b) return b;
    }
    return b < a ? b : a;
  }
};

/// Reduces `v` over the block (blockDim.x threads, a multiple of warpSize); every thread gets
/// the result. `identity` fills lanes without a value. Call it from all threads of the block.
template <typename A, typename Op>
__device__ A block_reduce(A v, Op op, A identity) {
  PORTA_SHARED(A, partial, [kRowThreads / 32]);  // one slot per warp at the smallest warp size
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  const int warps = blockDim.x / warpSize;
  auto combine = [op](A a, A b) { return op.combine(a, b); };
  v = warp_reduce(v, combine);
  __syncthreads();  // the previous call's readers are done with `partial`
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = threadIdx.x < warps ? partial[threadIdx.x] : identity;
  if (warp == 0) v = warp_reduce(v, combine);
  __syncthreads();
  if (threadIdx.x == 0) partial[0] = v;
  __syncthreads();
  return partial[0];
}

template <typename A>
__device__ __forceinline__ A acc_exp(A x) {
  if constexpr (std::is_same_v<A, float>) return expf(x);
  else return exp(x);
}
template <typename A>
__device__ __forceinline__ A acc_log(A x) {
  if constexpr (std::is_same_v<A, float>) return logf(x);
  else return log(x);
}
template <typename A>
__device__ __forceinline__ A acc_rsqrt(A x) {
  if constexpr (std::is_same_v<A, float>) return 1.0f / sqrtf(x);
  else return 1.0 / sqrt(x);
}

}  // namespace porta::PORTA_GPU_NS
