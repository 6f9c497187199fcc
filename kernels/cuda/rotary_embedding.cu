// porta gpu kernels — RotaryEmbedding (ai.porta): one thread per rotated pair of X [rows, S, D]
// (grid-stride), halves or interleaved pairs, arithmetic in float (16-bit floats, f32) or
// double (f64). CUDA and HIP.
#include "kernels/cuda/gpu_kernel.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename T, bool Interleaved>
__global__ void rotary_kernel(const T* x, const T* cos_table, const T* sin_table, T* y, int64_t pairs,
                              int64_t positions, int64_t half) {
  using A = acc_t<T>;
  for (int64_t k = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; k < pairs; k += int64_t{blockDim.x} * gridDim.x) {
    const int64_t i = k % half, row_pos = k / half, pos = row_pos % positions;
    const int64_t base = row_pos * 2 * half;
    const int64_t a = Interleaved ? base + 2 * i : base + i;
    const int64_t b = Interleaved ? a + 1 : a + half;
    const A c = load_acc<T>(cos_table[pos * half + i]), s = load_acc<T>(sin_table[pos * half + i]);
    const A xa = load_acc<T>(x[a]), xb = load_acc<T>(x[b]);
    y[a] = store_acc<T>(xa * c - xb * s);
    y[b] = store_acc<T>(xb * c + xa * s);
  }
}

void rotary_embedding_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t pairs = y.numel() / 2;
  if (pairs == 0) return;
  const int64_t interleaved = ctx.attrs->get_int("interleaved");
  if (interleaved != 0 && interleaved != 1)
    throw InvalidModel(str("[RotaryEmbedding] interleaved should be 0 or 1, got ", interleaved));
  const int64_t positions = x.shape()[2], half = x.shape()[3] / 2;
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kFloats>(x.dtype(), "RotaryEmbedding", [&](auto tag) {
    using T = decltype(tag);
    const T *px = device_ptr<const T>(x), *pc = device_ptr<const T>(ctx.in(1)), *ps = device_ptr<const T>(ctx.in(2));
    T* py = device_ptr<T>(y);
    unsigned blocks = grid_for(pairs, 256, device);
    if (interleaved) launch<rotary_kernel<T, true>>(blocks, 256, 0, stream(device), px, pc, ps, py, pairs, positions, half);
    else launch<rotary_kernel<T, false>>(blocks, 256, 0, stream(device), px, pc, ps, py, pairs, positions, half);
    PORTA_GPU_CHECK_LAUNCH(device, "rotary_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(RotaryEmbedding, kFloats, rotary_embedding_gpu)

}  // namespace porta::PORTA_GPU_NS
