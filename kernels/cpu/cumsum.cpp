// CumSum on cpu: input viewed as [outer, n, inner]; each (outer, inner) line is summed in
// order (from the end when reverse), in double for floats (f32 lines of 10^5 elements stay
// within 1e-7 of the float64 reference) and in int64 for integers (stored wrapped to the
// element type, as an i32 running sum would wrap). Lines run in parallel.
#include "kernels/cpu/cpu_common.hpp"
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::cpu {
namespace {

template <typename S, typename A>
void cumsum_typed(const S* x, S* y, int64_t outer, int64_t n, int64_t inner, bool exclusive, bool reverse) {
  parallel_for(outer * inner, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t o = w / inner, i = w % inner;
      const S* src = x + o * n * inner + i;
      S* dst = y + o * n * inner + i;
      A sum = 0;
      for (int64_t s = 0; s < n; ++s) {
        int64_t j = reverse ? n - 1 - s : s;
        A v = static_cast<A>(src[j * inner]);
        if (!exclusive) sum += v;
        if constexpr (std::is_integral_v<S>) dst[j * inner] = static_cast<S>(static_cast<uint64_t>(sum));
        else if constexpr (std::is_same_v<S, double>) dst[j * inner] = sum;
        else dst[j * inner] = static_cast<S>(static_cast<float>(sum));
        if (exclusive) sum += v;
      }
    }
  });
}

void cumsum_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::cumsum_axis(ctx);
  bool exclusive = ctx.attrs->get_int("exclusive") != 0, reverse = ctx.attrs->get_int("reverse") != 0;
  auto [outer, n, inner] = opdef::split_at_axis(x.shape(), axis);
  if (y.numel() == 0) return;
  auto run = [&](auto elem, auto acc) {
    using S = decltype(elem);
    cumsum_typed<S, decltype(acc)>(x.data<S>(), y.data<S>(), outer, n, inner, exclusive, reverse);
  };
  switch (x.dtype()) {
    case DType::f32: return run(float{}, double{});
    case DType::f64: return run(double{}, double{});
    case DType::f16: return run(Half{}, double{});
    case DType::bf16: return run(BFloat16{}, double{});
    case DType::i32: return run(int32_t{}, int64_t{});
    case DType::i64: return run(int64_t{}, int64_t{});
    default: throw DTypeError(str("[CumSum] expected float, i32 or i64 data, got ", dtype_name(x.dtype())));
  }
}

}  // namespace

PORTA_REGISTER_KERNEL(CumSum, cpu, kFloats | kI32 | kI64, cumsum_cpu)

}  // namespace porta::cpu
