// porta gpu kernels — LayerNormalization (opset 17, stash_type 1): one block per row of the
// normalized axes, mean and biased variance in two passes (as the reference, so large means
// do not cancel), accumulating in float (f16/bf16/f32) or double (f64).
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "ops/common.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    layer_norm_rows(const T* x, const T* scale, const T* bias, T* y, float* mean_out,
                    float* inv_std_out, int64_t rows, int64_t len, double epsilon) {
  using A = acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* px = x + row * len;
    T* py = y + row * len;
    A sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += load_acc<T>(px[j]);
    const A mean = block_reduce(sum, SumOp{}, A(0)) / static_cast<A>(len);
    A sq = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A d = load_acc<T>(px[j]) - mean;
      sq += d * d;
    }
    const A var = block_reduce(sq, SumOp{}, A(0)) / static_cast<A>(len);
    const A inv = acc_rsqrt(var + static_cast<A>(epsilon));
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      A v = (load_acc<T>(px[j]) - mean) * inv * load_acc<T>(scale[j]);
      if (bias) v += load_acc<T>(bias[j]);
      py[j] = store_acc<T>(v);
    }
    if (threadIdx.x == 0) {
      if (mean_out) mean_out[row] = static_cast<float>(mean);
      if (inv_std_out) inv_std_out[row] = static_cast<float>(inv);
    }
  }
}

struct CopyFn {
  template <typename A>
  __device__ A operator()(A x) const { return x; }
};

// Scale or B as a dense [len] vector: as given when it already has len elements, else its
// broadcast to the normalized shape, materialized on the device.
template <typename T>
Tensor dense_param(const Tensor& p, const Shape& norm, int64_t len, Device device) {
  if (p.numel() == len) return p;
  KernelContext copy;
  copy.device = device;
  copy.inputs = {p};
  copy.outputs = {Tensor::empty(norm, p.dtype(), device)};
  launch_elementwise<T, T, 1>(copy, CopyFn{});
  return copy.outputs[0];
}

void layer_norm_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const int64_t rank = x.rank();
  const int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), rank, "LayerNormalization");
  Shape norm(x.shape().begin() + axis, x.shape().end());
  int64_t len = shape_numel(norm);
  // Rows from the leading axes, so an empty normalized shape still writes its statistics
  // (mean of nothing is NaN, as in the reference).
  int64_t rows = 1;
  for (int64_t i = 0; i < axis; ++i) rows *= x.shape()[i];
  auto optional_out = [&](size_t i) -> float* {
    return ctx.outputs.size() > i && ctx.out(i).defined() && ctx.out(i).numel() > 0
               ? device_ptr<float>(ctx.out(i))
               : nullptr;
  };
  float* mean_out = optional_out(1);
  float* inv_out = optional_out(2);
  if (rows == 0) return;
  int device = ctx.device.index;
  cudaStream_t s = stream(device);
  visit_gpu_dtype_in<kFloats>(x.dtype(), "LayerNormalization", [&](auto tag) {
    using T = decltype(tag);
    Tensor scale = dense_param<T>(ctx.in(1), norm, len, ctx.device);
    Tensor bias = ctx.has_input(2) ? dense_param<T>(ctx.in(2), norm, len, ctx.device) : Tensor();
    unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
    launch<layer_norm_rows<T>>(blocks, kRowThreads, 0, s,
        device_ptr<const T>(x), device_ptr<const T>(scale),
        bias.defined() ? device_ptr<const T>(bias) : nullptr, device_ptr<T>(ctx.out(0)), mean_out,
        inv_out, rows, len, ctx.attrs->get_float("epsilon"));
    PORTA_GPU_CHECK_LAUNCH(device, "layer_norm_rows");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(LayerNormalization, kFloats, layer_norm_gpu)

}  // namespace porta::PORTA_GPU_NS
