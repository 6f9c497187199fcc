// porta gpu kernels — RmsNorm (ai.porta): one block per row of the last axis,
//   y = x * rsqrt(mean(x^2) + epsilon) * scale,
// the sum of squares accumulated in float (f16/bf16/f32) or double (f64). CUDA and HIP.
#include "kernels/cuda/block_reduce.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    rms_norm_rows(const T* x, const T* scale, T* y, int64_t rows, int64_t len, double epsilon) {
  using A = acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* px = x + row * len;
    T* py = y + row * len;
    A sum_sq = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A v = load_acc<T>(px[j]);
      sum_sq += v * v;
    }
    const A mean_sq = block_reduce(sum_sq, SumOp{}, A(0)) / static_cast<A>(len);
    const A inv_rms = acc_rsqrt(mean_sq + static_cast<A>(epsilon));
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
      py[j] = store_acc<T>(load_acc<T>(px[j]) * inv_rms * load_acc<T>(scale[j]));
  }
}

void rms_norm_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;  // no rows, or rows of length 0
  const int64_t len = x.shape().back(), rows = x.numel() / len;
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kFloats>(x.dtype(), "RmsNorm", [&](auto tag) {
    using T = decltype(tag);
    unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
    launch<rms_norm_rows<T>>(blocks, kRowThreads, 0, stream(device), device_ptr<const T>(x), device_ptr<const T>(ctx.in(1)),
                                                                 device_ptr<T>(y), rows, len,
                                                                 ctx.attrs->get_float("epsilon"));
    PORTA_GPU_CHECK_LAUNCH(device, "rms_norm_rows");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(RmsNorm, kFloats, rms_norm_gpu)

}  // namespace porta::PORTA_GPU_NS
