// porta gpu kernels — Pow with broadcasting and strided inputs, the base X in f32/f64/f16/
// bf16/i32/i64 and the exponent Y of any numeric dtype, with the rules of ops/pow.cpp:
//  - float X, Y of X's dtype: pow in X's arithmetic type (float for f16/bf16/f32);
//  - float X, Y of another dtype: pow in double;
//  - integer X, integer Y: exact power by squaring, wrapping; a negative exponent gives 1 for
//    X = 1, +-1 for X = -1, else 0;
//  - integer X, float Y: pow in double, truncated as Cast does (NaN -> 0, saturating to i64).
#include <climits>

#include "kernels/cuda/elementwise.cuh"
#include "ops/int_pow.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

using opdef::float_to_int;
using opdef::int_pow;

template <typename T, typename E>
__device__ __forceinline__ T pow_one(T x, E y) {
  auto a = load_acc<T>(x);
  auto b = load_acc<E>(y);
  using A = decltype(a);
  using B = decltype(b);
  if constexpr (std::is_integral_v<A>) {
    if constexpr (std::is_integral_v<B>) return int_pow<A>(a, static_cast<int64_t>(b));
    else return float_to_int<A>(pow(static_cast<double>(a), static_cast<double>(b)));
  } else if constexpr (std::is_same_v<T, E>) {
    if constexpr (std::is_same_v<A, float>) return store_acc<T>(powf(a, b));
    else return store_acc<T>(pow(a, b));
  } else {
    return store_acc<T>(static_cast<A>(pow(static_cast<double>(a), static_cast<double>(b))));
  }
}

template <typename T, typename E>
__global__ void pow_kernel(T* z, const T* x, const E* y, int64_t n, Indexer<3, int64_t> ix) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[3];
    ix.offsets(i, off);
    z[off[0]] = pow_one<T, E>(x[off[1]], y[off[2]]);
  }
}

constexpr DTypeSet kPowBase = kFloats | kI32 | kI64;

void pow_gpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &y = ctx.in(1);
  Tensor& z = ctx.out(0);
  const int64_t n = z.numel();
  if (n == 0) return;
  const int device = ctx.device.index;
  Layout l = make_layout(z, {&x, &y});
  Indexer<3, int64_t> ix = make_indexer<3, int64_t>(l);
  visit_gpu_dtype_in<kPowBase>(x.dtype(), "Pow", [&](auto base_tag) {
    using T = decltype(base_tag);
    visit_gpu_dtype_in<kNumeric>(y.dtype(), "Pow", [&](auto exp_tag) {
      using E = decltype(exp_tag);
      launch<pow_kernel<T, E>>(grid_for(n, 256, device), 256, 0, stream(device),
          device_ptr<T>(z), device_ptr<const T>(x), device_ptr<const E>(y), n, ix);
      PORTA_GPU_CHECK_LAUNCH(device, "pow_kernel");
    });
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_STRIDED(Pow, kPowBase, pow_gpu, elementwise_supports)

}  // namespace porta::PORTA_GPU_NS
