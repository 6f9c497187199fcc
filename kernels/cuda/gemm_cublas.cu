// porta gpu kernels — GEMM through cuBLAS (cuda builds only; hip has no vendor BLAS here, and
// the emulator runs porta's own GEMM).
//
// Row-major C = op(A) op(B) is computed as column-major C^T = op(B)^T op(A)^T, so B goes
// first. f32 uses full-precision FP32 math unless PORTA_CUDA_ALLOW_TF32=1 (TF32 keeps only 10
// mantissa bits, which PyTorch users do not expect by default for MatMul).
#if !defined(PORTA_HIP) && !defined(PORTA_GPU_EMU)
#include <cublas_v2.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/gemm.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

#define PORTA_CUBLAS_CHECK(device, call)                                                    \
  do {                                                                                      \
    cublasStatus_t porta_cublas_status_ = (call);                                           \
    if (porta_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                      \
      throw BackendError(str("[cuda] ", #call, " failed on cuda:", (device), ": ",          \
                             cublasGetStatusString(porta_cublas_status_), " (", __FILE__, \
                             ":", __LINE__, ")"));                                          \
  } while (0)

bool allow_tf32() {
  static const bool allowed = [] {
    const char* v = std::getenv("PORTA_CUDA_ALLOW_TF32");
    return v && std::string(v) == "1";
  }();
  return allowed;
}

// One handle per device, bound to the device's stream; created on first use.
cublasHandle_t handle(int device) {
  static std::mutex mutex;
  static std::vector<cublasHandle_t>* handles = new std::vector<cublasHandle_t>();
  cudaStream_t s = stream(device);  // also makes the device current
  std::lock_guard lock(mutex);
  if (handles->size() <= static_cast<size_t>(device)) handles->resize(device + 1, nullptr);
  cublasHandle_t& h = (*handles)[device];
  if (!h) {
    PORTA_CUBLAS_CHECK(device, cublasCreate(&h));
    PORTA_CUBLAS_CHECK(device, cublasSetStream(h, s));
  }
  return h;
}

template <typename T> constexpr cudaDataType_t cuda_type();
template <> constexpr cudaDataType_t cuda_type<float>() { return CUDA_R_32F; }
template <> constexpr cudaDataType_t cuda_type<double>() { return CUDA_R_64F; }
template <> constexpr cudaDataType_t cuda_type<__half>() { return CUDA_R_16F; }
template <> constexpr cudaDataType_t cuda_type<bf16_t>() { return CUDA_R_16BF; }

}  // namespace

template <typename T>
bool gemm_cublas(const GemmCall<T>& p, int device) {
  if (p.m > INT_MAX || p.n > INT_MAX || p.k > INT_MAX || p.lda > INT_MAX || p.ldb > INT_MAX ||
      p.ldc > INT_MAX || p.batches > INT_MAX || p.batch.rank > 1)
    return false;
  cublasHandle_t h = handle(device);
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  const int lda = static_cast<int>(std::max<int64_t>(p.lda, 1));
  const int ldb = static_cast<int>(std::max<int64_t>(p.ldb, 1));
  const int ldc = static_cast<int>(std::max<int64_t>(p.ldc, 1));
  constexpr cudaDataType_t type = cuda_type<T>();
  cublasComputeType_t compute;
  const void *alpha, *beta;
  double alpha64 = p.alpha, beta64 = p.beta;
  float alpha32 = static_cast<float>(p.alpha), beta32 = static_cast<float>(p.beta);
  if constexpr (std::is_same_v<T, double>) {
    compute = CUBLAS_COMPUTE_64F;
    alpha = &alpha64;
    beta = &beta64;
  } else {
    compute = std::is_same_v<T, float> && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                        : CUBLAS_COMPUTE_32F;
    alpha = &alpha32;
    beta = &beta32;
  }
  if (p.batch.rank == 0) {
    PORTA_CUBLAS_CHECK(device, cublasGemmEx(h, op_b, op_a, n, m, k, alpha, p.b, type, ldb, p.a,
                                            type, lda, beta, p.c, type, ldc, compute,
                                            CUBLAS_GEMM_DEFAULT));
  } else {
    PORTA_CUBLAS_CHECK(device, cublasGemmStridedBatchedEx(
                                   h, op_b, op_a, n, m, k, alpha, p.b, type, ldb, p.batch.strides[2][0],
                                   p.a, type, lda, p.batch.strides[1][0], beta, p.c, type, ldc,
                                   p.batch.strides[0][0], static_cast<int>(p.batches), compute,
                                   CUBLAS_GEMM_DEFAULT));
  }
  return true;
}

template bool gemm_cublas<float>(const GemmCall<float>&, int);
template bool gemm_cublas<double>(const GemmCall<double>&, int);
template bool gemm_cublas<__half>(const GemmCall<__half>&, int);
template bool gemm_cublas<bf16_t>(const GemmCall<bf16_t>&, int);

}  // namespace porta::PORTA_GPU_NS
#endif  // !PORTA_HIP && !PORTA_GPU_EMU

#if !defined(PORTA_HIP) && !defined(PORTA_GPU_EMU)
/// Benchmark hook (tests/gpu_perf_test.cpp finds it with dlsym): mean time in microseconds of
/// `reps` FP32 cublasGemmEx calls of m x k by k x n on cuda:0 with porta's settings, on fresh
/// zero-filled buffers; -1 when anything fails. Lets the perf test compare porta's MatMul
/// with cuBLAS called directly without including a vendor header.
extern "C" __attribute__((visibility("default"))) double porta_cuda_direct_sgemm_us(int m, int n, int k,
                                                                                    int reps) {
  using namespace porta::porta_cuda;
  try {
    float *a = nullptr, *b = nullptr, *c = nullptr;
    cudaStream_t s = stream(0);
    size_t sa = size_t(m) * k * 4, sb = size_t(k) * n * 4, sc = size_t(m) * n * 4;
    if (cudaMalloc(&a, sa) != cudaSuccess || cudaMalloc(&b, sb) != cudaSuccess ||
        cudaMalloc(&c, sc) != cudaSuccess)
      return -1;
    cudaMemsetAsync(a, 0, sa, s);
    cudaMemsetAsync(b, 0, sb, s);
    cublasHandle_t h = handle(0);
    float alpha = 1, beta = 0;
    auto run = [&] {
      return cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_32F, n, a,
                          CUDA_R_32F, k, &beta, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    };
    run();
    run();
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    cudaEventRecord(e0, s);
    bool ok = true;
    for (int i = 0; i < reps; ++i) ok &= run() == CUBLAS_STATUS_SUCCESS;
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return ok ? ms * 1000.0 / reps : -1;
  } catch (...) {
    return -1;
  }
}
#endif
