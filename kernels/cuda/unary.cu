// porta gpu kernels — unary elementwise ops. Math runs in float for f16/bf16/f32 (with the
// precise, non-fast-math library functions) and in double for f64.
#include "kernels/cuda/elementwise_ops.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

// f(x) with the float or double library function, picked by the accumulator type.
#define PORTA_GPU_MATH_FN(Name, float_fn, double_fn)                     \
  struct Name {                                                          \
    template <typename A>                                                \
    __device__ A operator()(A x) const {                                 \
      if constexpr (std::is_same_v<A, float>) return float_fn(x);        \
      else return double_fn(x);                                          \
    }                                                                    \
  };
PORTA_GPU_MATH_FN(ExpFn, expf, exp)
PORTA_GPU_MATH_FN(LogFn, logf, log)
PORTA_GPU_MATH_FN(SqrtFn, sqrtf, sqrt)
PORTA_GPU_MATH_FN(TanhFn, tanhf, tanh)
PORTA_GPU_MATH_FN(ErfFn, erff, erf)
PORTA_GPU_MATH_FN(SinFn, sinf, sin)
PORTA_GPU_MATH_FN(CosFn, cosf, cos)
PORTA_GPU_MATH_FN(FloorFn, floorf, floor)
PORTA_GPU_MATH_FN(CeilFn, ceilf, ceil)
PORTA_GPU_MATH_FN(TanFn, tanf, tan)
PORTA_GPU_MATH_FN(RoundFn, rintf, rint)  // half to even under the default rounding mode
PORTA_GPU_MATH_FN(Expm1Fn, expm1f, expm1)
PORTA_GPU_MATH_FN(Log1pFn, log1pf, log1p)
#undef PORTA_GPU_MATH_FN

// v clamped to [0, 1]; NaN stays NaN (both comparisons are false).
template <typename A>
__device__ A unit_clamp(A v) {
  return v < A(0) ? A(0) : v > A(1) ? A(1) : v;
}
struct SignFn {
  template <typename A>
  __device__ A operator()(A x) const {
    if constexpr (std::is_unsigned_v<A>) return A(x > A(0));
    else return x > A(0) ? A(1) : x < A(0) ? A(-1) : x == A(0) ? A(0) : x;  // NaN stays NaN
  }
};
struct HardSwishFn {
  template <typename A>
  __device__ A operator()(A x) const { return x * unit_clamp(x / A(6) + A(0.5)); }
};
struct SoftplusFn {
  template <typename A>
  __device__ A operator()(A x) const { return (x > A(0) ? x : A(0)) + Log1pFn{}(ExpFn{}(x < A(0) ? x : -x)); }
};
struct SoftsignFn {
  template <typename A>
  __device__ A operator()(A x) const { return x / (A(1) + (x < A(0) ? -x : x)); }
};

struct SigmoidFn {
  template <typename A>
  __device__ A operator()(A x) const { return A(1) / (A(1) + ExpFn{}(-x)); }
};
struct ReciprocalFn {
  template <typename A>
  __device__ A operator()(A x) const { return A(1) / x; }
};
// Integers: |MIN| wraps to MIN, like the CPU kernels and numpy.
struct AbsFn {
  template <typename A>
  __device__ A operator()(A x) const {
    if constexpr (std::is_unsigned_v<A>) return x;
    else if constexpr (std::is_integral_v<A>) return x < 0 ? wrap_sub(A(0), x) : x;
    else return x < A(0) ? -x : (x == A(0) ? A(0) : x);  // |-0| = +0, NaN stays NaN
  }
};
struct NegFn {
  template <typename A>
  __device__ A operator()(A x) const { return wrap_sub(A(0), x) ; }
};
// ONNX Relu is max(x, 0) as numpy evaluates it: NaN stays NaN (as in PyTorch).
struct ReluFn {
  template <typename A>
  __device__ A operator()(A x) const { return x < A(0) ? A(0) : x; }
};
struct NotFn {
  __device__ bool operator()(bool x) const { return !x; }
};

// Functors with an `alpha` attribute, held in double so f64 keeps its precision.
struct LeakyReluFn {
  double alpha;
  template <typename A>
  __device__ A operator()(A x) const { return x >= A(0) ? x : static_cast<A>(alpha) * x; }
};
struct EluFn {
  double alpha;
  template <typename A>
  __device__ A operator()(A x) const {
    if (x > A(0)) return x;
    if constexpr (std::is_same_v<A, float>) return static_cast<float>(alpha) * expm1f(x);
    else return alpha * expm1(x);
  }
};
struct HardSigmoidFn {
  double alpha, beta;
  template <typename A>
  __device__ A operator()(A x) const { return unit_clamp(static_cast<A>(alpha) * x + static_cast<A>(beta)); }
};
struct SeluFn {
  double alpha, gamma;
  template <typename A>
  __device__ A operator()(A x) const {
    return x > A(0) ? static_cast<A>(gamma) * x : static_cast<A>(gamma * alpha) * Expm1Fn{}(x);
  }
};
struct CeluFn {
  double alpha;
  template <typename A>
  __device__ A operator()(A x) const {
    if (x != x) return x;
    A a = static_cast<A>(alpha), neg = a * Expm1Fn{}(x / a);
    return (x > A(0) ? x : A(0)) + (neg < A(0) ? neg : A(0));
  }
};
// Functors built from two float attributes.
template <typename F>
struct WithTwo {
  const char* first;
  const char* second;
  template <typename T>
  F operator()(const KernelContext& ctx, T) const {
    return F{ctx.attrs->get_float(first), ctx.attrs->get_float(second)};
  }
};

template <typename F>
struct WithAlpha {
  template <typename T>
  F operator()(const KernelContext& ctx, T) const { return F{ctx.attrs->get_float("alpha")}; }
};

// Clip with optional scalar min/max inputs, read on the device (no host round trip).
// NaN passes through, as in the reference and PyTorch.
template <typename T>
struct ClipFn {
  const T* lo;
  const T* hi;
  __device__ acc_t<T> operator()(acc_t<T> x) const {
    if (lo) {
      acc_t<T> l = load_acc<T>(*lo);
      if (x < l) x = l;
    }
    if (hi) {
      acc_t<T> h = load_acc<T>(*hi);
      if (x > h) x = h;
    }
    return x;
  }
};
struct MakeClip {
  template <typename T>
  ClipFn<T> operator()(const KernelContext& ctx, T) const {
    return {ctx.has_input(1) ? device_ptr<const T>(ctx.in(1)) : nullptr,
            ctx.has_input(2) ? device_ptr<const T>(ctx.in(2)) : nullptr};
  }
};

constexpr DTypeSet kSignedTypes = kFloats | kI64 | kI32 | kI8;
constexpr DTypeSet kReluTypes = kFloats | kI64 | kI32 | kI8;

}  // namespace

#define PORTA_GPU_UNARY(Op, Types, Make)                                                  \
  PORTA_REGISTER_GPU_KERNEL_STRIDED(Op, Types, (same_type_kernel<1, Types>(#Op, Make)), \
                                    elementwise_supports)
PORTA_GPU_UNARY(Relu, kReluTypes, Stateless<ReluFn>{})
PORTA_GPU_UNARY(Abs, kNumeric, Stateless<AbsFn>{})
PORTA_GPU_UNARY(Neg, kSignedTypes, Stateless<NegFn>{})
PORTA_GPU_UNARY(Exp, kFloats, Stateless<ExpFn>{})
PORTA_GPU_UNARY(Log, kFloats, Stateless<LogFn>{})
PORTA_GPU_UNARY(Sqrt, kFloats, Stateless<SqrtFn>{})
PORTA_GPU_UNARY(Tanh, kFloats, Stateless<TanhFn>{})
PORTA_GPU_UNARY(Sigmoid, kFloats, Stateless<SigmoidFn>{})
PORTA_GPU_UNARY(Erf, kFloats, Stateless<ErfFn>{})
PORTA_GPU_UNARY(Sin, kFloats, Stateless<SinFn>{})
PORTA_GPU_UNARY(Cos, kFloats, Stateless<CosFn>{})
PORTA_GPU_UNARY(Floor, kFloats, Stateless<FloorFn>{})
PORTA_GPU_UNARY(Ceil, kFloats, Stateless<CeilFn>{})
PORTA_GPU_UNARY(Reciprocal, kFloats, Stateless<ReciprocalFn>{})
PORTA_GPU_UNARY(Not, kBool, Stateless<NotFn>{})
PORTA_GPU_UNARY(LeakyRelu, kFloats, WithAlpha<LeakyReluFn>{})
PORTA_GPU_UNARY(Elu, kFloats, WithAlpha<EluFn>{})
PORTA_GPU_UNARY(Clip, kNumeric, MakeClip{})
PORTA_GPU_UNARY(Sign, kNumeric, Stateless<SignFn>{})
PORTA_GPU_UNARY(Round, kFloats, Stateless<RoundFn>{})
PORTA_GPU_UNARY(Tan, kFloats, Stateless<TanFn>{})
PORTA_GPU_UNARY(HardSwish, kFloats, Stateless<HardSwishFn>{})
PORTA_GPU_UNARY(Softplus, kFloats, Stateless<SoftplusFn>{})
PORTA_GPU_UNARY(Softsign, kFloats, Stateless<SoftsignFn>{})
PORTA_GPU_UNARY(HardSigmoid, kFloats, (WithTwo<HardSigmoidFn>{"alpha", "beta"}))
PORTA_GPU_UNARY(Selu, kFloats, (WithTwo<SeluFn>{"alpha", "gamma"}))
PORTA_GPU_UNARY(Celu, kFloats, WithAlpha<CeluFn>{})
#undef PORTA_GPU_UNARY

}  // namespace porta::PORTA_GPU_NS
