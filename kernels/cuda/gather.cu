// porta gpu kernels — Gather (ONNX, any axis, negative indices count from the end).
//
// Out-of-range indices are an error, never an out-of-bounds read: a small kernel checks every
// index on the device and reports the first bad one through a deferred check (gpu_runtime.hpp),
// which raises the cpu kernel's ShapeError (op, axis, valid range, value) when the host next
// waits for the stream; the gather kernel skips bad indices. No host wait inside a graph run.
// Elements move by size (1/2/4/8 bytes).
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

// Output element w = ((o * n_idx) + i) * inner + r reads data[(o * dim + index[i]) * inner + r].
template <typename E, typename I>
__global__ void gather_kernel(const E* data, const I* indices, E* out, int64_t total,
                              int64_t n_idx, int64_t inner, int64_t dim) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < total; w += step) {
    int64_t r = w % inner, oi = w / inner;
    int64_t i = oi % n_idx, o = oi / n_idx;
    int64_t k = static_cast<int64_t>(indices[i]);
    if (k < -dim || k >= dim) continue;  // reported by check_indices_kernel
    if (k < 0) k += dim;
    out[w] = data[(o * dim + k) * inner + r];
  }
}

// Every index in [-dim, dim), else the first failure is recorded for the host.
template <typename I>
__global__ void check_indices_kernel(const I* indices, int64_t n_idx, int64_t dim,
                                     DeferredCheck check) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n_idx; i += step) {
    int64_t k = static_cast<int64_t>(indices[i]);
    if (k < -dim || k >= dim) report_failed_check(check, k);
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
  // Checked even when nothing is written (empty outer or inner dims), as on cpu.
  DeferredCheck check = arm_deferred_check(device, [dim, axis, shape = x.shape()](int64_t bad) {
    opdef::check_gather_index(bad, dim, axis, shape);
  });
  auto launch_for = [&](auto elem, auto index) {
    using E = decltype(elem);
    using I = decltype(index);
    launch<check_indices_kernel<I>>(grid_for(n_idx, 256, device), 256, 0, s,
        device_ptr<const I>(ind), n_idx, dim, check);
    PORTA_GPU_CHECK_LAUNCH(device, "check_indices_kernel");
    if (total == 0) return;
    launch<gather_kernel<E, I>>(grid_for(total, 256, device), 256, 0, s,
        device_ptr<const E>(x), device_ptr<const I>(ind), device_ptr<E>(y), total, n_idx, inner, dim);
    PORTA_GPU_CHECK_LAUNCH(device, "gather_kernel");
  };
  auto by_index = [&](auto elem) {
    if (ind.dtype() == DType::i64) launch_for(elem, int64_t{});
    else launch_for(elem, int32_t{});
  };
  switch (dtype_size(x.dtype())) {
    case 1: by_index(uint8_t{}); break;
    case 2: by_index(uint16_t{}); break;
    case 4: by_index(uint32_t{}); break;
    default: by_index(uint64_t{}); break;
  }
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(Gather, kAllTypes, gather_gpu)

}  // namespace porta::PORTA_GPU_NS
