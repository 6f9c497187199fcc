// porta gpu kernels — batched GEMM shared by MatMul and Gemm: C = alpha * op(A) op(B) + beta * C
// on row-major matrices, with per-batch offsets from an Indexer (NumPy batch broadcasting).
// The tiled kernel runs on every GPU (it is the hip path and the cuda fallback); on cuda,
// cuBLAS is used when present (gemm_cublas.cu).
#pragma once
#include "kernels/cuda/elementwise.cuh"

namespace porta::PORTA_GPU_NS {

/// One batched GEMM call. Element offsets of batch i come from batch.offsets(i): operand 0 is
/// C, 1 is A, 2 is B. Leading dimensions are row strides in elements.
template <typename T>
struct GemmCall {
  const T* a = nullptr;
  const T* b = nullptr;
  T* c = nullptr;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  double alpha = 1.0, beta = 0.0;  ///< beta == 0: C is not read (may hold NaN)
  int64_t batches = 1;
  Indexer<3, int64_t> batch;       ///< rank 0 when batches == 1
};

/// Runs the call on the device stream: cuBLAS on cuda when it takes the call, else the
/// tiled kernel.
template <typename T>
void gemm(const GemmCall<T>& call, int device);

/// cuBLAS path (cuda builds only); returns false when it does not take the call.
template <typename T>
bool gemm_cublas(const GemmCall<T>& call, int device);

}  // namespace porta::PORTA_GPU_NS
