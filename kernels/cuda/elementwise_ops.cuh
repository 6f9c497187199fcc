// porta gpu kernels — helpers for registering elementwise ops: kernel functions built from a
// functor, and integer arithmetic that wraps (two's complement) without signed overflow.
#pragma once
#include <limits>
#include <type_traits>

#include "kernels/cuda/elementwise.cuh"

namespace porta::PORTA_GPU_NS {

/// Kernel function: output 0 (the input's dtype) = F over the first `Inputs` inputs, for
/// the dtypes in `Allowed`. `make` builds the functor from the call (attributes, scalars).
template <int Inputs, DTypeSet Allowed, typename Make>
KernelFn same_type_kernel(const char* op, Make make) {
  return [op, make](KernelContext& ctx) {
    visit_gpu_dtype_in<Allowed>(ctx.in(0).dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      launch_elementwise<T, T, Inputs>(ctx, make(ctx, tag));
    });
  };
}

/// Functor with no parameters, for same_type_kernel.
template <typename F>
struct Stateless {
  template <typename T>
  F operator()(const KernelContext&, T) const { return F{}; }
};

// Wrapping integer arithmetic: computed on the unsigned type, where overflow is defined.
template <typename A>
__device__ __forceinline__ A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename A>
__device__ __forceinline__ A wrap_sub(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename A>
__device__ __forceinline__ A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    // Promote narrow unsigned types past int so the product cannot overflow a signed int.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<A>(static_cast<U>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}

}  // namespace porta::PORTA_GPU_NS
