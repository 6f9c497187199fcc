// porta gpu kernels — broadcasting binary ops (Add, Sub, Mul, Div, And, Or).
// Semantics follow ops/elementwise_common.hpp: integers wrap; integer Div truncates toward
// zero, x / 0 is 0 and MIN / -1 is MIN; float ops are IEEE (x / 0 = ±inf, 0 / 0 = NaN).
#include "kernels/cuda/elementwise_ops.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

struct AddFn {
  template <typename A>
  __device__ A operator()(A a, A b) const { return wrap_add(a, b); }
};
struct SubFn {
  template <typename A>
  __device__ A operator()(A a, A b) const { return wrap_sub(a, b); }
};
struct MulFn {
  template <typename A>
  __device__ A operator()(A a, A b) const { return wrap_mul(a, b); }
};
struct DivFn {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if constexpr (std::is_integral_v<A>) {
      if (b == 0) return A(0);
      if constexpr (std::is_signed_v<A>)
        if (b == A(-1)) return wrap_sub(A(0), a);  // MIN / -1 wraps to MIN
      return static_cast<A>(a / b);
    } else {
      return a / b;
    }
  }
};
struct AndFn {
  __device__ bool operator()(bool a, bool b) const { return a && b; }
};
struct OrFn {
  __device__ bool operator()(bool a, bool b) const { return a || b; }
};

}  // namespace

PORTA_REGISTER_GPU_KERNEL_STRIDED(Add, kNumeric, (same_type_kernel<2, kNumeric>("Add", Stateless<AddFn>{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Sub, kNumeric, (same_type_kernel<2, kNumeric>("Sub", Stateless<SubFn>{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Mul, kNumeric, (same_type_kernel<2, kNumeric>("Mul", Stateless<MulFn>{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Div, kNumeric, (same_type_kernel<2, kNumeric>("Div", Stateless<DivFn>{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(And, kBool, (same_type_kernel<2, kBool>("And", Stateless<AndFn>{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Or, kBool, (same_type_kernel<2, kBool>("Or", Stateless<OrFn>{})),
                                  elementwise_supports)

}  // namespace porta::PORTA_GPU_NS
