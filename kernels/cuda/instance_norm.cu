// porta gpu kernels — InstanceNormalization: each (n, c) slice of X (N x C x spatial...) is one
// row, normalized with its mean and biased variance (two passes, as the reference), then
// scaled and shifted by scale[c] and B[c]. One block per row; float accumulation for
// f16/bf16/f32, double for f64.
#include "kernels/cuda/block_reduce.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    instance_norm_rows(const T* x, const T* scale, const T* bias, T* y, int64_t rows,
                       int64_t channels, int64_t len, double epsilon) {
  using A = acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* px = x + row * len;
    T* py = y + row * len;
    A sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += load_acc<T>(px[j]);
    const A mean = block_reduce(sum, SumOp{}, A(0)) / static_cast<A>(len);
    A sq = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const A d = load_acc<T>(px[j]) - mean;
      sq += d * d;
    }
    const A var = block_reduce(sq, SumOp{}, A(0)) / static_cast<A>(len);
    const A inv = acc_rsqrt(var + static_cast<A>(epsilon));
    const A s = load_acc<T>(scale[row % channels]), b = load_acc<T>(bias[row % channels]);
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
      py[j] = store_acc<T>((load_acc<T>(px[j]) - mean) * inv * s + b);
  }
}

void instance_norm_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t channels = x.shape()[1], rows = x.shape()[0] * channels;
  if (rows == 0 || x.numel() == 0) return;
  const int64_t len = x.numel() / rows;
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kFloats>(x.dtype(), "InstanceNormalization", [&](auto tag) {
    using T = decltype(tag);
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
    launch<instance_norm_rows<T>>(blocks, kRowThreads, 0, stream(device),
        device_ptr<const T>(x), device_ptr<const T>(ctx.in(1)), device_ptr<const T>(ctx.in(2)),
        device_ptr<T>(ctx.out(0)), rows, channels, len, ctx.attrs->get_float("epsilon"));
    PORTA_GPU_CHECK_LAUNCH(device, "instance_norm_rows");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(InstanceNormalization, kFloats, instance_norm_gpu)

}  // namespace porta::PORTA_GPU_NS
