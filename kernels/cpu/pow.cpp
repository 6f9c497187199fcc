// Pow on cpu. f32 with a scalar exponent (x^2, x^0.5, ...) runs as oneDNN's eltwise pow; the
// other cases are broadcasting loops. Exponents of another dtype than the base are read as
// i64 (integer base, integer exponent) or double (otherwise). Semantics: see ops/pow.cpp.
#include <cmath>
#include <limits>

#include "kernels/cpu/elementwise_cpu.hpp"
#include "ops/int_pow.hpp"

namespace porta::cpu {
namespace {

using opdef::float_to_int;
using opdef::int_pow;

void pow_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Tensor& y = ctx.in(1);
  Tensor& z = ctx.out(0);
  if (x.dtype() == DType::f32 && y.numel() == 1 && z.shape() == x.shape() && is_floating(y.dtype())) {
    float e = static_cast<float>(y.to_doubles().at(0));
    return ew::dnnl_eltwise_f32(x, z, dnnl::algorithm::eltwise_pow, 1.0f, e);
  }
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (dtype_in(kFloats | kI32 | kI64, ew::dtype_of<T>())) {
      using C = ew::compute_t<T>;
      if constexpr (std::is_integral_v<C>) {
        if (y.dtype() == x.dtype())
          ew::binary_loop<T, T>(x, y, z, [](C a, C b) { return int_pow<C>(a, b); });
        else if (is_integer(y.dtype()))
          ew::binary_loop<T, T, int64_t>(x, y.cast(DType::i64), z, [](C a, int64_t b) { return int_pow<C>(a, b); });
        else
          ew::binary_loop<T, T, double>(x, y.cast(DType::f64), z, [](C a, double b) {
            return float_to_int<C>(std::pow(static_cast<double>(a), b));
          });
      } else {
        if (y.dtype() == x.dtype())
          ew::binary_loop<T, T>(x, y, z, [](C a, C b) { return std::pow(a, b); });
        else
          ew::binary_loop<T, T, double>(x, y.cast(DType::f64), z, [](C a, double b) {
            return std::pow(static_cast<double>(a), b);
          });
      }
    } else {
      ew::unsupported_dtype("Pow", x.dtype(), kFloats | kI32 | kI64);
    }
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(Pow, cpu, kFloats | kI32 | kI64, pow_cpu)

}  // namespace porta::cpu
