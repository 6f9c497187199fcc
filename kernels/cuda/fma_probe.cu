// porta gpu kernels — the arithmetic-peak probe behind Backend::measure_fma_gflops on cuda,
// hip and the emulator (backends/fma_probe.hpp): every thread runs 16 independent f32 fma
// chains in registers and writes their sum, which the host checks exactly. Not an op kernel.
#include "backends/cuda/gpu_runtime.hpp"
#include "backends/cuda/compat.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

constexpr int kChains = 16;

__global__ void fma_probe_kernel(float* sums, int iters, float one, float step, float unit) {
  float x[kChains];
#pragma unroll
  for (int c = 0; c < kChains; ++c) x[c] = static_cast<float>(c) * unit;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = fmaf(x[c], one, step);
  }
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < kChains; ++c) s += x[c];
  sums[int64_t{blockIdx.x} * blockDim.x + threadIdx.x] = s;
}

}  // namespace

FmaProbeShape fma_probe_shape() { return {60000, 1.0f, 1.0f / (1 << 20), 1.0f / 4096, 256, kChains}; }

void launch_fma_probe(int device, float* sums, uint32_t blocks) {
  const FmaProbeShape p = fma_probe_shape();
  launch<fma_probe_kernel>(dim3(blocks), dim3(p.threads), 0, stream(device), sums, p.iters, p.one, p.step,
                           p.start_unit);
  PORTA_GPU_CHECK_LAUNCH(device, "fma_probe_kernel");
}

}  // namespace porta::PORTA_GPU_NS
