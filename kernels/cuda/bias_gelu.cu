// porta gpu kernels — BiasGelu (ai.porta): y = gelu(x + bias[i % C]), one grid-stride loop,
// and Gelu (ONNX opset 20) through the elementwise family; arithmetic in float (f16/bf16/f32)
// or double (f64). CUDA and HIP.
// 1 + erf(z) is computed as erfc(-z) and 1 + tanh(u) from exp(-2|u|), so neither cancels in
// gelu's negative tail.
#include <cmath>

#include "kernels/cuda/elementwise_ops.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename A>
__device__ __forceinline__ A one_plus_erf(A z) {
  if constexpr (std::is_same_v<A, float>) return erfcf(-z);
  else return erfc(-z);
}

// 1 + tanh(u) = 2 / (1 + e) for u >= 0, 2e / (1 + e) for u < 0, e = exp(-2|u|) in (0, 1].
template <typename A>
__device__ __forceinline__ A one_plus_tanh(A u) {
  A e;
  if constexpr (std::is_same_v<A, float>) e = expf(-2.0f * fabsf(u));
  else e = exp(-2.0 * fabs(u));
  return u >= A(0) ? A(2) / (A(1) + e) : A(2) * e / (A(1) + e);
}

// gelu(h), erf form or tanh form; NaN stays NaN.
template <typename A>
__device__ __forceinline__ A gelu_value(A h, bool tanh_form) {
  const A sqrt_2_over_pi = static_cast<A>(0.79788456080286535588);
  const A inv_sqrt_2 = static_cast<A>(0.70710678118654752440);
  A v = tanh_form ? A(0.5) * h * one_plus_tanh(sqrt_2_over_pi * (h + A(0.044715) * h * h * h))
                  : A(0.5) * h * one_plus_erf(h * inv_sqrt_2);
  return h != h ? h : v;
}

template <typename T, bool Tanh>
__global__ void bias_gelu_kernel(const T* x, const T* bias, T* y, int64_t n, int64_t channels) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x)
    y[i] = store_acc<T>(gelu_value(load_acc<T>(x[i]) + load_acc<T>(bias[i % channels]), Tanh));
}

struct GeluFn {
  bool tanh_form;
  template <typename A>
  __device__ A operator()(A x) const { return gelu_value(x, tanh_form); }
};
struct MakeGelu {
  template <typename T>
  GeluFn operator()(const KernelContext& ctx, T) const {  // "approximate" checked by inference
    return {ctx.attrs->get_string("approximate") == "tanh"};
  }
};

void bias_gelu_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const std::string& mode = ctx.attrs->get_string("approximate");
  if (mode != "none" && mode != "tanh")
    throw InvalidModel(str("[BiasGelu] approximate should be 'none' or 'tanh', got '", mode, "'"));
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kFloats>(x.dtype(), "BiasGelu", [&](auto tag) {
    using T = decltype(tag);
    const T* px = device_ptr<const T>(x);
    const T* pb = device_ptr<const T>(ctx.in(1));
    T* py = device_ptr<T>(y);
    unsigned blocks = grid_for(n, 256, device);
    if (mode == "tanh") launch<bias_gelu_kernel<T, true>>(blocks, 256, 0, stream(device), px, pb, py, n, x.shape().back());
    else launch<bias_gelu_kernel<T, false>>(blocks, 256, 0, stream(device), px, pb, py, n, x.shape().back());
    PORTA_GPU_CHECK_LAUNCH(device, "bias_gelu_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(BiasGelu, kFloats, bias_gelu_gpu)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Gelu, kFloats, (same_type_kernel<1, kFloats>("Gelu", MakeGelu{})),
                                  elementwise_supports)

}  // namespace porta::PORTA_GPU_NS
