// porta gpu kernels — BatchNormalization in inference mode (training_mode = 0; inference
// rejects the rest): Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (axis 1).
// Computed in float (f16/bf16/f32) or double (f64) exactly as written, like the reference.
#include "kernels/cuda/gpu_kernel.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename T>
__global__ void batch_norm_kernel(const T* x, const T* scale, const T* bias, const T* mean,
                                  const T* var, T* y, int64_t total, int64_t channels,
                                  int64_t inner, double epsilon) {
  using A = acc_t<T>;
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += step) {
    int64_t c = (i / inner) % channels;
    A sum = load_acc<T>(var[c]) + static_cast<A>(epsilon);
    A denom;
    if constexpr (std::is_same_v<A, float>) denom = sqrtf(sum);
    else denom = sqrt(sum);
    A v = (load_acc<T>(x[i]) - load_acc<T>(mean[c])) / denom * load_acc<T>(scale[c]) + load_acc<T>(bias[c]);
    y[i] = store_acc<T>(v);
  }
}

void batch_norm_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t total = y.numel();
  if (total == 0) return;
  int64_t channels = x.shape()[1], inner = total / (x.shape()[0] * channels);
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kFloats>(x.dtype(), "BatchNormalization", [&](auto tag) {
    using T = decltype(tag);
    launch<batch_norm_kernel<T>>(grid_for(total, 256, device), 256, 0, stream(device),
        device_ptr<const T>(x), device_ptr<const T>(ctx.in(1)), device_ptr<const T>(ctx.in(2)),
        device_ptr<const T>(ctx.in(3)), device_ptr<const T>(ctx.in(4)), device_ptr<T>(y), total,
        channels, inner, ctx.attrs->get_float("epsilon"));
    PORTA_GPU_CHECK_LAUNCH(device, "batch_norm_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(BatchNormalization, kFloats, batch_norm_gpu)

}  // namespace porta::PORTA_GPU_NS
