// porta gpu kernels — Gather (ONNX, any axis, negative indices count from the end).
//
// Out-of-range indices are an error, never an out-of-bounds read: the kernel skips them and
// records one offending value; the host then reads that record (one small synchronous copy)
// and throws the same ShapeError as the cpu kernel. Elements move by size (1/2/4/8 bytes).
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

// Output element w = ((o * n_idx) + i) * inner + r reads data[(o * dim + index[i]) * inner + r].
template <typename E, typename I>
__global__ void gather_kernel(const E* data, const I* indices, E* out, int64_t total,
                              int64_t n_idx, int64_t inner, int64_t dim,
                              unsigned long long* bad) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < total; w += step) {
    int64_t r = w % inner, oi = w / inner;
    int64_t i = oi % n_idx, o = oi / n_idx;
    int64_t k = static_cast<int64_t>(indices[i]);
    if (k < -dim || k >= dim) {
      // Flag set + value kept (any one offending value will do for the message).
      atomicExch(&bad[1], static_cast<unsigned long long>(k));
      atomicExch(&bad[0], 1ull);
      continue;
    }
    if (k < 0) k += dim;
    out[w] = data[(o * dim + k) * inner + r];
  }
}

void gather_gpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Gather");
  int64_t dim = x.shape()[axis], n_idx = ind.numel(), inner = 1;
  for (int i = static_cast<int>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  int64_t total = y.numel();
  if (n_idx == 0) return;
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  Tensor bad = Tensor::empty({2}, DType::i64, ctx.device);
  PORTA_GPU_CHECK(device, cudaMemsetAsync(device_ptr<int64_t>(bad), 0, 16, s));
  auto* bad_ptr = reinterpret_cast<unsigned long long*>(device_ptr<int64_t>(bad));
  if (total > 0) {
    auto launch = [&](auto elem, auto index) {
      using E = decltype(elem);
      using I = decltype(index);
      gather_kernel<E, I><<<grid_for(total, 256, device), 256, 0, s>>>(
          device_ptr<const E>(x), device_ptr<const I>(ind), device_ptr<E>(y), total, n_idx, inner,
          dim, bad_ptr);
    };
    auto by_index = [&](auto elem) {
      if (ind.dtype() == DType::i64) launch(elem, int64_t{});
      else launch(elem, int32_t{});
    };
    switch (dtype_size(x.dtype())) {
      case 1: by_index(uint8_t{}); break;
      case 2: by_index(uint16_t{}); break;
      case 4: by_index(uint32_t{}); break;
      default: by_index(uint64_t{}); break;
    }
    PORTA_GPU_CHECK_LAUNCH(device, "gather_kernel");
  } else {
    // Nothing to write (empty outer or inner dims), but the indices must still be valid,
    // as on cpu: check them on the host (rare and small).
    for (int64_t k : opdef::tensor_ints(ind)) opdef::check_gather_index(k, dim, axis, x.shape());
    return;
  }
  int64_t record[2] = {0, 0};
  bad.copy_to_host(record, sizeof(record));  // waits for the kernel
  if (record[0] != 0) opdef::check_gather_index(record[1], dim, axis, x.shape());
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(Gather, kAllTypes, gather_gpu)

}  // namespace porta::PORTA_GPU_NS
