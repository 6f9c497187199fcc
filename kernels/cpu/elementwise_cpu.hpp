// porta cpu kernels — loops shared by the elementwise family: typed unary maps, broadcasting
// binary maps, and oneDNN eltwise for f32.
//
// Element functions are generic lambdas over the compute type: the storage type itself, or
// float for f16/bf16 (loaded once, computed in float, rounded once on store).
#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/cpu_common.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::cpu::ew {

/// Elements per thread chunk below which a loop stays on one thread.
inline constexpr int64_t kGrain = 1 << 15;

template <typename T> struct compute { using type = T; };
template <> struct compute<Half> { using type = float; };
template <> struct compute<BFloat16> { using type = float; };
template <typename T> using compute_t = typename compute<T>::type;

template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, Half>) return DType::f16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::bf16;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::u8;
  else return DType::boolean;
}

/// Converts a computed value to storage type T (integers wrap, bool is != 0).
template <typename T, typename C>
inline T store(C v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T(static_cast<float>(v));
  else return static_cast<T>(v);
}

[[noreturn]] void unsupported_dtype(std::string_view op, DType t, DTypeSet allowed);

/// y[i] = f(x[i]) over contiguous x of storage type T into y of type TO.
template <typename T, typename TO = T, typename F>
void unary_loop(const Tensor& x, Tensor& y, F&& f) {
  using C = compute_t<T>;
  const T* src = x.data<T>();
  TO* dst = y.data<TO>();
  parallel_for(x.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) dst[i] = store<TO>(f(static_cast<C>(src[i])));
  });
}

/// y[i] = f(x[i]) over contiguous input 0 -> output 0 (same dtype), for dtypes in Mask.
template <DTypeSet Mask, typename F>
void unary_apply(KernelContext& ctx, F&& f) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (dtype_in(Mask, dtype_of<T>())) {
      unary_loop<T>(x, y, f);
    } else {
      unsupported_dtype(ctx.op->name, x.dtype(), Mask);
    }
  });
}

/// out = f(a, b) with NumPy broadcasting; a and b are contiguous and of types TA and TB, out of TO
/// (a may be `out` itself when it has out's shape). Same-shape and scalar operands take flat
/// loops the compiler vectorizes; the rest go run by run along the innermost axis.
template <typename TA, typename TO, typename TB = TA, typename F>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, F&& f) {
  using C = compute_t<TA>;
  using CB = compute_t<TB>;
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* po = out.data<TO>();
  int64_t n = out.numel();
  if (n == 0) return;
  bool a_full = a.shape() == out.shape(), b_full = b.shape() == out.shape();
  if ((a_full || a.numel() == 1) && (b_full || b.numel() == 1)) {
    int64_t sa = a_full ? 1 : 0, sb = b_full ? 1 : 0;
    parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
      if (sa == 1 && sb == 1) {
        for (int64_t i = s; i < e; ++i) po[i] = store<TO>(f(static_cast<C>(pa[i]), static_cast<CB>(pb[i])));
      } else if (sa == 1) {
        CB vb = static_cast<CB>(pb[0]);
        for (int64_t i = s; i < e; ++i) po[i] = store<TO>(f(static_cast<C>(pa[i]), vb));
      } else if (sb == 1) {
        C va = static_cast<C>(pa[0]);
        for (int64_t i = s; i < e; ++i) po[i] = store<TO>(f(va, static_cast<CB>(pb[i])));
      } else {
        for (int64_t i = s; i < e; ++i) po[i] = store<TO>(f(static_cast<C>(pa[0]), static_cast<CB>(pb[0])));
      }
    });
    return;
  }
  // One operand full, the other repeating with period p along the flat index (its shape is
  // the output's trailing dims, as a per-channel mean over NHWC): blocks of p, no per-run
  // index arithmetic.
  auto period = [&](const Tensor& t) -> int64_t {
    const Shape& ts = t.shape();
    const Shape& os = out.shape();
    size_t lead = 0;
    while (lead < ts.size() && ts[lead] == 1) ++lead;
    size_t k = ts.size() - lead;
    if (k == 0 || k > os.size()) return 0;
    for (size_t i = 0; i < k; ++i)
      if (ts[lead + i] != os[os.size() - k + i]) return 0;
    return t.numel();
  };
  int64_t pb_period = a_full ? period(b) : 0, pa_period = (!pb_period && b_full) ? period(a) : 0;
  if (pb_period > 0 || pa_period > 0) {
    int64_t p = pb_period > 0 ? pb_period : pa_period, blocks = n / p;
    parallel_for(blocks, std::max<int64_t>(1, kGrain / p), [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        const int64_t base = blk * p;
        if (pb_period > 0)
          for (int64_t j = 0; j < p; ++j)
            po[base + j] = store<TO>(f(static_cast<C>(pa[base + j]), static_cast<CB>(pb[j])));
        else
          for (int64_t j = 0; j < p; ++j)
            po[base + j] = store<TO>(f(static_cast<C>(pa[j]), static_cast<CB>(pb[base + j])));
      }
    });
    return;
  }
  BroadcastIter it(out.shape(), {&a, &b});
  int64_t inner = it.inner, sa = it.inner_stride[0], sb = it.inner_stride[1];
  parallel_for(it.runs(), std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)),
               [&](int64_t r0, int64_t r1) {
    int64_t off[2];
    for (int64_t r = r0; r < r1; ++r) {
      it.offsets(r, off);
      const TA* ra = pa + off[0];
      const TB* rb = pb + off[1];
      TO* ro = po + r * inner;
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < inner; ++i) ro[i] = store<TO>(f(static_cast<C>(ra[i]), static_cast<CB>(rb[i])));
      } else if (sa == 1) {
        CB vb = static_cast<CB>(rb[0]);
        for (int64_t i = 0; i < inner; ++i) ro[i] = store<TO>(f(static_cast<C>(ra[i]), vb));
      } else if (sb == 1) {
        C va = static_cast<C>(ra[0]);
        for (int64_t i = 0; i < inner; ++i) ro[i] = store<TO>(f(va, static_cast<CB>(rb[i])));
      } else {
        for (int64_t i = 0; i < inner; ++i)
          ro[i] = store<TO>(f(static_cast<C>(ra[i * sa]), static_cast<CB>(rb[i * sb])));
      }
    }
  });
}

/// Binary op over inputs 0 and 1 (one dtype, in Mask) -> output 0 of the same dtype, or bool
/// when BoolOut.
template <DTypeSet Mask, bool BoolOut, typename F>
void binary_apply(KernelContext& ctx, F&& f) {
  visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (dtype_in(Mask, dtype_of<T>())) {
      using TO = std::conditional_t<BoolOut, bool, T>;
      binary_loop<T, TO>(ctx.in(0), ctx.in(1), ctx.out(0), f);
    } else {
      unsupported_dtype(ctx.op->name, ctx.in(0).dtype(), Mask);
    }
  });
}

/// dst = eltwise(src) by oneDNN over contiguous f32 tensors of one size (primitive cached).
void dnnl_eltwise_f32(const Tensor& src, Tensor& dst, dnnl::algorithm alg, float alpha = 0.f,
                      float beta = 0.f);

}  // namespace porta::cpu::ew
