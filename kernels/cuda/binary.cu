// porta gpu kernels — broadcasting binary ops (Add, Sub, Mul, Div, Mod, PRelu, And, Or).
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
// Mod: fmod = 1 keeps the dividend's sign (C fmod), fmod = 0 the divisor's (numpy.mod);
// an integer x mod 0 and MIN mod -1 are 0.
struct ModFn {
  bool floored;
  template <typename A>
  __device__ A operator()(A a, A b) const {
    A r;
    if constexpr (std::is_integral_v<A>) {
      if (b == A(0)) return A(0);
      if constexpr (std::is_signed_v<A>)
        if (b == A(-1)) return A(0);
      r = static_cast<A>(a % b);
    } else if constexpr (std::is_same_v<A, float>) {
      r = fmodf(a, b);
    } else {
      r = fmod(a, b);
    }
    if constexpr (!std::is_unsigned_v<A>)  // unsigned remainders have no sign to fix
      if (floored && r != A(0) && ((r < A(0)) != (b < A(0)))) r = static_cast<A>(r + b);
    return r;
  }
};
struct MakeMod {
  template <typename T>
  ModFn operator()(const KernelContext& ctx, T) const { return {ctx.attrs->get_int("fmod") == 0}; }
};
struct PReluFn {
  template <typename A>
  __device__ A operator()(A x, A slope) const { return x < A(0) ? slope * x : x; }
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
PORTA_REGISTER_GPU_KERNEL_STRIDED(Mod, kNumeric, (same_type_kernel<2, kNumeric>("Mod", MakeMod{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(PRelu, kFloats, (same_type_kernel<2, kFloats>("PRelu", Stateless<PReluFn>{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(And, kBool, (same_type_kernel<2, kBool>("And", Stateless<AndFn>{})),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Or, kBool, (same_type_kernel<2, kBool>("Or", Stateless<OrFn>{})),
                                  elementwise_supports)

}  // namespace porta::PORTA_GPU_NS
