// porta gpu kernels — Cast, with the conversion rules of ops/cast.cpp on every dtype pair:
// to bool x != 0 (NaN -> true); float to integer truncates, NaN -> 0, beyond the i64 range
// saturates to the i64 limits, then wraps to narrower types; integer to integer wraps; to a
// float type rounds to nearest even (f64 -> f16/bf16 through f32, like the reference).
#include <climits>

#include "kernels/cuda/gpu_kernel.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

template <typename Out, typename In>
__device__ __forceinline__ Out cast_one(In x) {
  auto a = load_acc<In>(x);  // float / double / integer / bool
  using A = decltype(a);
  if constexpr (std::is_same_v<Out, bool>) {
    return a != A(0);
  } else if constexpr (std::is_floating_point_v<acc_t<Out>>) {
    return store_acc<Out>(static_cast<acc_t<Out>>(a));
  } else if constexpr (std::is_floating_point_v<A>) {
    double v = static_cast<double>(a);
    int64_t r;
    if (v != v) r = 0;
    else if (v >= 9223372036854775807.0) r = LLONG_MAX;
    else if (v <= -9223372036854775808.0) r = LLONG_MIN;
    else r = static_cast<int64_t>(v);  // truncates toward zero
    return static_cast<Out>(r);      // modular (C++20) for narrower types
  } else {
    return static_cast<Out>(static_cast<int64_t>(a));
  }
}

template <typename Out, typename In>
__global__ void cast_kernel(const In* src, Out* dst, int64_t n) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step)
    dst[i] = cast_one<Out, In>(src[i]);
}

void cast_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t n = y.numel();
  if (n == 0) return;
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  if (x.dtype() == y.dtype()) {
    PORTA_GPU_CHECK(device, cudaMemcpyAsync(device_ptr<char>(y), device_ptr<const char>(x), y.nbytes(),
                                            cudaMemcpyDeviceToDevice, s));
    return;
  }
  visit_gpu_dtype(x.dtype(), [&](auto in_tag) {
    using In = decltype(in_tag);
    visit_gpu_dtype(y.dtype(), [&](auto out_tag) {
      using Out = decltype(out_tag);
      launch<cast_kernel<Out, In>>(grid_for(n, 256, device), 256, 0, s, device_ptr<const In>(x),
                                                                     device_ptr<Out>(y), n);
    });
  });
  PORTA_GPU_CHECK_LAUNCH(device, "cast_kernel");
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(Cast, kAllTypes, cast_gpu)

}  // namespace porta::PORTA_GPU_NS
