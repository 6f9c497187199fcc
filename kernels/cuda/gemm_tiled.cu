// porta gpu kernels — the portable tiled GEMM (hip, and cuda when cuBLAS declines).
//
// Each block computes a 64x64 tile of C with 256 threads, 4x4 results per thread, staging
// 64x16 slices of A and B through shared memory. Accumulates in float (f16/bf16/f32) or
// double (f64). No warp-size assumption: only __syncthreads is used.
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/shared_memory.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

constexpr int kTileM = 64, kTileN = 64, kTileK = 16, kThreadsX = 16, kThreadsY = 16;
constexpr int kThreads = kThreadsX * kThreadsY;

template <typename T>
__global__ void __launch_bounds__(kThreads) gemm_tiled_kernel(GemmCall<T> p) {
  using Acc = acc_t<T>;
  PORTA_SHARED(Acc, tile_a, [kTileK][kTileM + 1]);
  PORTA_SHARED(Acc, tile_b, [kTileK][kTileN + 1]);
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kThreadsX + tx;
  const int64_t row0 = int64_t{blockIdx.y} * kTileM, col0 = int64_t{blockIdx.x} * kTileN;
  for (int64_t batch = blockIdx.z; batch < p.batches; batch += gridDim.z) {
    int64_t off[3] = {0, 0, 0};
    if (p.batch.rank > 0) p.batch.offsets(batch, off);
    const T* a = p.a + off[1];
    const T* b = p.b + off[2];
    T* c = p.c + off[0];
    Acc acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][j] = Acc(0);
    for (int64_t k0 = 0; k0 < p.k; k0 += kTileK) {
      for (int idx = tid; idx < kTileM * kTileK; idx += kThreads) {
        int r = idx / kTileK, kk = idx % kTileK;
        int64_t gm = row0 + r, gk = k0 + kk;
        Acc v = Acc(0);
        if (gm < p.m && gk < p.k) v = load_acc<T>(p.trans_a ? a[gk * p.lda + gm] : a[gm * p.lda + gk]);
        tile_a[kk][r] = v;
      }
      for (int idx = tid; idx < kTileK * kTileN; idx += kThreads) {
        int kk = idx / kTileN, col = idx % kTileN;
        int64_t gk = k0 + kk, gn = col0 + col;
        Acc v = Acc(0);
        if (gk < p.k && gn < p.n) v = load_acc<T>(p.trans_b ? b[gn * p.ldb + gk] : b[gk * p.ldb + gn]);
        tile_b[kk][col] = v;
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTileK; ++kk) {
        Acc av[4], bv[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) av[i] = tile_a[kk][ty + i * kThreadsY];
#pragma unroll
        for (int j = 0; j < 4; ++j) bv[j] = tile_b[kk][tx + j * kThreadsX];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
      }
      __syncthreads();
    }
    const Acc alpha = static_cast<Acc>(p.alpha), beta = static_cast<Acc>(p.beta);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      int64_t gm = row0 + ty + i * kThreadsY;
      if (gm >= p.m) continue;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        int64_t gn = col0 + tx + j * kThreadsX;
        if (gn >= p.n) continue;
        Acc v = alpha * acc[i][j];
        if (p.beta != 0.0) v += beta * load_acc<T>(c[gm * p.ldc + gn]);
        c[gm * p.ldc + gn] = store_acc<T>(v);
      }
    }
  }
}

}  // namespace

template <typename T>
void gemm(const GemmCall<T>& call, int device) {
  if (call.m == 0 || call.n == 0 || call.batches == 0) return;
  if (gemm_cublas(call, device)) return;
  cudaStream_t s = stream(device);
  dim3 block(kThreadsX, kThreadsY);
  dim3 grid(static_cast<unsigned>((call.n + kTileN - 1) / kTileN),
            static_cast<unsigned>((call.m + kTileM - 1) / kTileM),
            static_cast<unsigned>(std::min<int64_t>(call.batches, 65535)));
  if (grid.y > 65535)
    throw Unsupported(str("[gemm] " PORTA_GPU_NAME " tiled kernel takes up to ", 65535 * kTileM,
                          " rows, got ", call.m));
  launch<gemm_tiled_kernel<T>>(grid, block, 0, s, call);
  PORTA_GPU_CHECK_LAUNCH(device, "gemm_tiled_kernel");
}

template void gemm<float>(const GemmCall<float>&, int);
template void gemm<double>(const GemmCall<double>&, int);
template void gemm<__half>(const GemmCall<__half>&, int);
template void gemm<bf16_t>(const GemmCall<bf16_t>&, int);

#if defined(PORTA_HIP) || defined(PORTA_GPU_EMU)
// No vendor BLAS on hip (Debian ships no hipBLAS/rocBLAS), none emulated: the tiled kernel
// always runs.
template <typename T>
bool gemm_cublas(const GemmCall<T>&, int) { return false; }
template bool gemm_cublas<float>(const GemmCall<float>&, int);
template bool gemm_cublas<double>(const GemmCall<double>&, int);
template bool gemm_cublas<__half>(const GemmCall<__half>&, int);
template bool gemm_cublas<bf16_t>(const GemmCall<bf16_t>&, int);
#endif

}  // namespace porta::PORTA_GPU_NS
