// porta gpu kernels — Softmax and LogSoftmax (opset 13) along one axis, as
// exp(x - max) / sum(exp(x - max)), accumulating in float (f16/bf16/f32) or double (f64).
// The tensor is viewed as [outer, len, inner]: rows (inner == 1) get one block each with
// block reductions; strided columns (inner > 1) get one thread each, coalesced over inner,
// and so do short rows (len <= kShortRow): a 256-thread block on a row of a few elements
// would leave almost all its threads idle and still pay for the barriers.
#include <cmath>

#include "kernels/cuda/block_reduce.cuh"
#include "ops/order_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename T, bool Log>
__global__ void __launch_bounds__(kRowThreads)
    softmax_rows(const T* x, T* y, int64_t rows, int64_t len) {
  using A = acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* px = x + row * len;
    T* py = y + row * len;
    A mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) mx = MaxOp{}.combine(mx, load_acc<T>(px[j]));
    mx = block_reduce(mx, MaxOp{}, A(-INFINITY));
    A sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += acc_exp(load_acc<T>(px[j]) - mx);
    sum = block_reduce(sum, SumOp{}, A(0));
    const A log_sum = acc_log(sum);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A v = load_acc<T>(px[j]) - mx;
      py[j] = store_acc<T>(Log ? v - log_sum : acc_exp(v) / sum);
    }
  }
}

template <typename T, bool Log>
__global__ void softmax_columns(const T* x, T* y, int64_t outer, int64_t len, int64_t inner) {
  using A = acc_t<T>;
  int64_t columns = outer * inner, step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t c = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; c < columns; c += step) {
    int64_t o = c / inner, i = c % inner;
    const T* px = x + o * len * inner + i;
    T* py = y + o * len * inner + i;
    A mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < len; ++j) mx = MaxOp{}.combine(mx, load_acc<T>(px[j * inner]));
    for (int64_t j = 0; j < len; ++j) sum += acc_exp(load_acc<T>(px[j * inner]) - mx);
    const A log_sum = acc_log(sum);
    for (int64_t j = 0; j < len; ++j) {
      A v = load_acc<T>(px[j * inner]) - mx;
      py[j * inner] = store_acc<T>(Log ? v - log_sum : acc_exp(v) / sum);
    }
  }
}

constexpr int64_t kShortRow = 32;

template <bool Log>
void softmax_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const opdef::AxisSplit g = opdef::split_at_axis_attr(ctx);
  const int64_t len = g.n, inner = g.inner, outer = g.outer;
  int device = ctx.device.index;
  cudaStream_t s = stream(device);
  visit_gpu_dtype_in<kFloats>(x.dtype(), ctx.op->name, [&](auto tag) {
    using T = decltype(tag);
    const T* px = device_ptr<const T>(x);
    T* py = device_ptr<T>(y);
    if (inner == 1 && len > kShortRow) {
      unsigned blocks = static_cast<unsigned>(std::min<int64_t>(outer, 65535));
      launch<softmax_rows<T, Log>>(blocks, kRowThreads, 0, s, px, py, outer, len);
    } else {
      launch<softmax_columns<T, Log>>(grid_for(outer * inner, 256, device), 256, 0, s, px, py, outer, len, inner);
    }
    PORTA_GPU_CHECK_LAUNCH(device, "softmax kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(Softmax, kFloats, softmax_gpu<false>)
PORTA_REGISTER_GPU_KERNEL(LogSoftmax, kFloats, softmax_gpu<true>)

}  // namespace porta::PORTA_GPU_NS
