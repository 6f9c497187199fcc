// Sub, Mul, Div, Mod and PRelu on cpu: broadcasting loops the compiler vectorizes (at 4096x4096 f32 they run
// at memory bandwidth, so oneDNN's binary primitive would not be faster). Integer arithmetic
// goes through unsigned types so overflow wraps instead of being undefined.
#include <cmath>
#include <type_traits>

#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

template <typename C>
using wide_unsigned = std::make_unsigned_t<C>;

void sub_cpu(KernelContext& ctx) {
  ew::binary_apply<kNumeric, false>(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<wide_unsigned<C>>(a) - static_cast<wide_unsigned<C>>(b));
    else return a - b;
  });
}

void mul_cpu(KernelContext& ctx) {
  ew::binary_apply<kNumeric, false>(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>) {
      // uint8/int8 promote to int (no overflow); wider types multiply as unsigned (wraps).
      using U = std::conditional_t<(sizeof(C) < sizeof(int)), int, wide_unsigned<C>>;
      return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  });
}

void div_cpu(KernelContext& ctx) {
  ew::binary_apply<kNumeric, false>(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return static_cast<C>(0 - static_cast<wide_unsigned<C>>(a));  // MIN / -1 wraps
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  });
}

// Mod (ops/binary_arith.cpp): fmod = 1 keeps the dividend's sign, fmod = 0 the divisor's.
void mod_cpu(KernelContext& ctx) {
  bool c_style = ctx.attrs->get_int("fmod") != 0;
  auto f = [c_style](auto a, auto b) {
    using C = decltype(a);
    C r;
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(0);  // MIN % -1 would trap
      r = static_cast<C>(a % b);
    } else {
      r = std::fmod(a, b);
    }
    if (!c_style && r != C(0) && ((r < C(0)) != (b < C(0)))) r = static_cast<C>(r + b);
    return r;
  };
  ew::binary_apply<kNumeric, false>(ctx, f);
}

void prelu_cpu(KernelContext& ctx) {
  ew::binary_apply<kFloats, false>(ctx, [](auto x, auto slope) { return x < decltype(x)(0) ? slope * x : x; });
}

}  // namespace

PORTA_REGISTER_KERNEL(Mod, cpu, kNumeric, mod_cpu)
PORTA_REGISTER_KERNEL(PRelu, cpu, kFloats, prelu_cpu)
PORTA_REGISTER_KERNEL(Sub, cpu, kNumeric, sub_cpu)
PORTA_REGISTER_KERNEL(Mul, cpu, kNumeric, mul_cpu)
PORTA_REGISTER_KERNEL(Div, cpu, kNumeric, div_cpu)

}  // namespace porta::cpu
