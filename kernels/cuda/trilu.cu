// porta gpu kernels — Trilu (upper / lower, optional k), as ops/trilu.cpp: one thread per
// element of the [batch, rows, cols] view copies it when col - row >= k (upper) or <= k
// (lower), else writes zero bits (0 in every dtype). k is read on the device (no host wait);
// elements move by size (1/2/4/8 bytes), so four instantiations serve every dtype.
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/common.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename E, typename K>
__global__ void trilu_kernel(const E* x, E* y, int64_t total, int64_t rows, int64_t cols, const K* k_value,
                             bool upper) {
  const int64_t k = k_value ? static_cast<int64_t>(k_value[0]) : 0;
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < total; w += step) {
    const int64_t col = w % cols, row = (w / cols) % rows;
    // col - row is within +-2^63 for any shape; compare without forming row + k (k may be huge).
    const int64_t d = col - row;
    const bool keep = upper ? d >= k : d <= k;
    y[w] = keep ? x[w] : E{};
  }
}

void trilu_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t total = y.numel();
  if (total == 0) return;
  const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  const int device = ctx.device.index;
  const bool upper = ctx.attrs->get_int("upper") != 0;
  Tensor k;
  if (ctx.has_input(1)) k = ctx.in(1).device() == ctx.device ? ctx.in(1) : ctx.in(1).to(ctx.device);
  auto launch_for = [&](auto elem, auto k_tag) {
    using E = decltype(elem);
    using K = decltype(k_tag);
    launch<trilu_kernel<E, K>>(grid_for(total, 256, device), 256, 0, stream(device),
        device_ptr<const E>(x), device_ptr<E>(y), total, rows, cols, k.defined() ? device_ptr<const K>(k) : nullptr,
        upper);
  };
  auto by_k = [&](auto elem) {
    if (k.defined() && k.dtype() == DType::i32) launch_for(elem, int32_t{});
    else launch_for(elem, int64_t{});
  };
  switch (dtype_size(x.dtype())) {
    case 1: by_k(uint8_t{}); break;
    case 2: by_k(uint16_t{}); break;
    case 4: by_k(uint32_t{}); break;
    default: by_k(uint64_t{}); break;
  }
  PORTA_GPU_CHECK_LAUNCH(device, "trilu_kernel");
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(Trilu, kAllTypes, trilu_gpu)

}  // namespace porta::PORTA_GPU_NS
