// BatchNormalization (inference) and InstanceNormalization on cpu; InstanceNormalization on oneDNN's
// batch_normalization primitive over X seen as N x C x (spatial product):
//  - BatchNormalization: folded to y = x * a + b per channel (a vectorized loop; faster than
//    the primitive on this plain view), with a fused Relu, Clip or LeakyRelu applied in the same
//    pass (graph fusion sets porta_activation, ops/fused_activation.hpp);
//  - InstanceNormalization: X seen as 1 x (N*C) x spatial; the per-(n, c) statistics are
//    computed in double and given to the primitive as global statistics; scale / B are
//    repeated N times.
// f64 runs plain loops.
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "ops/fused_activation.hpp"

namespace porta::cpu {

// The activations a BatchNormalization step applies in its own pass: Relu, Clip and LeakyRelu
// are all v < 0 ? v * slope : v, then clipped below and above in Clip's order (Relu: slope 1,
// lo 0; LeakyRelu: slope alpha; an absent bound is infinite). Each comparison is the one of
// ops/fused_activation.hpp's definitions, so NaN stays NaN and the signs of zeros agree.
template <typename T>
struct BatchNormActivation {
  T slope = 1, lo = -std::numeric_limits<T>::infinity(), hi = std::numeric_limits<T>::infinity();
  T operator()(T v) const { return clamp(v < 0 ? v * slope : v); }
  T clamp(T v) const {
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
  }
};

// The loops below have external linkage, as every PORTA_CPU_CLONES function of the library
// (kernels/cpu/target_clones.hpp), and so has the activation type they take.

// act(x * a[k] + b[k]) over `rows` rows of c channels (f32 stored channels-last). Compiled per
// vector width: inference BatchNormalization is memory-bound once its loop is wide. Without a
// negative slope (Relu, Clip, none) the loop is two clamps: GCC does not execute a multiply
// under a condition speculatively (it could raise a floating-point exception), so with the
// slope's `v < 0 ? v * slope : v` in it the AVX2 and baseline loops stayed scalar with a branch
// per element (densenet121's BatchNormalizations took 22% of its time on an AVX2 CPU, 3 ns an
// element).
// x's rows are x_stride floats apart, y's y_stride (a part of a joined X: batch_norm_parts).
PORTA_CPU_CLONES
void batch_norm_channels_last_f32(const float* x, int64_t x_stride, float* y, int64_t y_stride, int64_t rows, int64_t c,
                                  const float* a, const float* b, const BatchNormActivation<float>& act) {
  const BatchNormActivation<float> f = act;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * x_stride;
    float* yr = y + r * y_stride;
    if (f.slope == 1) {
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) yr[k] = f.clamp(xr[k] * a[k] + b[k]);
    } else {
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) yr[k] = f(xr[k] * a[k] + b[k]);
    }
  }
}

// act(x * a + b) over one plane of one channel (f32: per vector width, as above).
PORTA_CPU_CLONES
void batch_norm_plane(const float* x, float* y, int64_t n, float a, float b, const BatchNormActivation<float>& act) {
  const BatchNormActivation<float> f = act;
  if (f.slope == 1) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = f.clamp(x[j] * a + b);
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = f(x[j] * a + b);
  }
}
void batch_norm_plane(const double* x, double* y, int64_t n, double a, double b, const BatchNormActivation<double>& act) {
  for (int64_t j = 0; j < n; ++j) y[j] = act(x[j] * a + b);
}

namespace {

// The names batch_norm_activation reads: the kernel's KernelDef::fused_activations.
const std::vector<std::string>& batch_norm_fused_activations() {
  // porta_concat: it reads the inputs of a channel Concat before it (batch_norm_parts).
  static const std::vector<std::string> names{"Relu", "Clip", "LeakyRelu", "porta_concat"};
  return names;
}

template <typename T>
BatchNormActivation<T> batch_norm_activation(const Attributes& attrs) {
  using K = opdef::FusedActivation::Kind;
  const opdef::FusedActivation f = opdef::parse_fused_activation(attrs, "BatchNormalization");
  BatchNormActivation<T> act;
  switch (f.kind) {
    case K::none: break;
    case K::relu: act.lo = 0; break;
    case K::leaky_relu: act.slope = static_cast<T>(f.alpha); break;
    case K::clip:
      act.lo = static_cast<T>(f.alpha);
      act.hi = static_cast<T>(f.beta);
      break;
    default:
      throw BackendError(str("[BatchNormalization] internal: the cpu kernel does not apply a fused ", f.name));
  }
  return act;
}

using BatchNormPrimitive = MaybePrimitive<dnnl::batch_normalization_forward>;

// Normalizes `x` (viewed as n x c x inner, f32) per channel: with `mean` / `var` given
// (global statistics) or computed over n x inner when they are null.
void batch_norm_dnnl(const char* op, const void* x, void* y, int64_t n, int64_t c, int64_t inner,
                     const float* scale, const float* shift, const float* mean, const float* var,
                     double eps) {
  bool global = mean != nullptr;
  Shape view{n, c, inner};
  auto p = cached<BatchNormPrimitive>(dnn_key("batch_norm", view, global, eps), [&] {
    auto r = std::make_shared<BatchNormPrimitive>();
    try {
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      if (global) flags = flags | dnnl::normalization_flags::use_global_stats;
      dnnl::batch_normalization_forward::desc d(dnnl::prop_kind::forward_inference,
                                                plain_desc(view, DType::f32), static_cast<float>(eps), flags);
      r->pd = dnnl::batch_normalization_forward::primitive_desc(d, engine());
      r->prim = dnnl::batch_normalization_forward(r->pd);
      r->ok = true;
    } catch (const dnnl::error& e) {
      r->why = e.what();
    }
    return r;
  });
  if (!p->ok) throw BackendError(str("[", op, "] oneDNN refused ", shape_str(view), ": ", p->why));
  auto vec = plain_desc({c}, DType::f32);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), x)},
                                             {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), y)},
                                             {DNNL_ARG_SCALE, wrap_ptr(vec, scale)},
                                             {DNNL_ARG_SHIFT, wrap_ptr(vec, shift)}};
  if (global) {
    args.emplace(DNNL_ARG_MEAN, wrap_ptr(vec, mean));
    args.emplace(DNNL_ARG_VARIANCE, wrap_ptr(vec, var));
  }
  execute(p->prim, args);
}

// A BatchNormalization's statistics folded into y = act(x * a + b) per channel (in double,
// rounded once to T). In a session whose four parameters are constants it is made once and
// kept as the step's prepared call (KernelContext::state): DenseNet's 1024-channel steps spent
// as long on the square roots as on their 2x2 pixels.
template <typename T>
struct FoldedBatchNorm {
  std::array<const void*, 4> params{};  // the parameters' storage it was folded from
  std::vector<T> a, b;
  BatchNormActivation<T> act;

  FoldedBatchNorm(const KernelContext& ctx, double eps) : a(ctx.in(1).numel()), b(a.size()) {
    const T *scale = ctx.in(1).data<T>(), *shift = ctx.in(2).data<T>();
    const T *mean = ctx.in(3).data<T>(), *var = ctx.in(4).data<T>();
    for (size_t ch = 0; ch < a.size(); ++ch) {
      double ad = static_cast<double>(scale[ch]) / std::sqrt(static_cast<double>(var[ch]) + eps);
      a[ch] = static_cast<T>(ad);
      b[ch] = static_cast<T>(static_cast<double>(shift[ch]) - static_cast<double>(mean[ch]) * ad);
    }
    act = batch_norm_activation<T>(*ctx.attrs);
    for (size_t k = 0; k < 4; ++k) params[k] = ctx.in(k + 1).raw_data();
  }
  // Whether the call's parameters are the constants this was folded from.
  static bool constant_params(const KernelContext& ctx) {
    for (size_t k = 1; k <= 4; ++k)
      if (!ctx.is_constant_input(k)) return false;
    return true;
  }
  bool fits(const KernelContext& ctx) const {
    for (size_t k = 0; k < 4; ++k)
      if (ctx.in(k + 1).raw_data() != params[k]) return false;
    return constant_params(ctx) && static_cast<int64_t>(a.size()) == ctx.outputs.at(0).dim(1);
  }
};

// The step's folded parameters: kept from an earlier call when they still fit.
template <typename T>
const FoldedBatchNorm<T>& folded_batch_norm(KernelContext& ctx, double eps, std::shared_ptr<FoldedBatchNorm<T>>& made) {
  // A step's dtype never changes, so its state holds the FoldedBatchNorm<T> of that dtype.
  auto* folded = static_cast<FoldedBatchNorm<T>*>(ctx.state.get());
  if (folded && folded->fits(ctx)) return *folded;
  made = std::make_shared<FoldedBatchNorm<T>>(ctx, eps);
  if (FoldedBatchNorm<T>::constant_params(ctx)) ctx.state = made;
  return *made;
}

template <typename T>
void batch_norm_affine(KernelContext& ctx, int64_t n, int64_t c, int64_t inner, double eps) {
  std::shared_ptr<FoldedBatchNorm<T>> made;
  const FoldedBatchNorm<T>& folded = folded_batch_norm<T>(ctx, eps, made);
  const T *a = folded.a.data(), *b = folded.b.data();
  const BatchNormActivation<T> act = folded.act;
  const T* x = ctx.in(0).data<T>();
  T* y = ctx.out(0).data<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (activation_layout(*ctx.attrs).output && channels_last_tag(ctx.in(0).shape()) != dnnl::memory::format_tag::undef) {
      // Rows of c channels; about 64 KiB of y per task.
      parallel_for(n * inner, std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1)), [&](int64_t r0, int64_t r1) {
        batch_norm_channels_last_f32(x + r0 * c, c, y + r0 * c, c, r1 - r0, c, a, b, act);
      });
      return;
    }
  }
  parallel_for(n * c, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) batch_norm_plane(x + r * inner, y + r * inner, inner, a[r % c], b[r % c], act);
  });
}

// A BatchNormalization whose X is the join of the channel Concat before it (the session's
// concat_into_batch_norm, runtime/session_plan.hpp): X's parts are input 0 and inputs 5..,
// `porta_concat` of them (f32), each normalized straight into its channels of Y. Channels-last:
// per tile of pixels whose rows of Y fit in the L1 cache, each part's rows in turn; plain: each
// (image, channel) plane from its part.
void batch_norm_parts(KernelContext& ctx, int64_t parts, double eps) {
  Tensor& y = ctx.out(0);
  const int64_t n = y.dim(0), c = y.dim(1), inner = n * c == 0 ? 0 : y.numel() / (n * c);
  std::vector<const float*> src;
  std::vector<int64_t> begin;  // each part's first channel, then c
  int64_t at = 0;
  for (int64_t i = 0; i < parts; ++i) {
    const Tensor& x = ctx.in(i == 0 ? 0 : static_cast<size_t>(i) + 4);
    bool fits = x.dtype() == DType::f32 && x.rank() == y.rank() && x.is_contiguous() && x.dim(0) == n;
    for (size_t d = 2; fits && d < y.shape().size(); ++d) fits = x.dim(static_cast<int>(d)) == y.dim(static_cast<int>(d));
    if (!fits)
      throw BackendError(str("[BatchNormalization] internal: part ", i, " of X ", shape_str(x.shape()),
                             " does not fit Y ", shape_str(y.shape())));
    src.push_back(x.data<float>());
    begin.push_back(at);
    at += x.dim(1);
  }
  if (at != c)
    throw BackendError(str("[BatchNormalization] internal: X's parts have ", at, " channels, Y ", c));
  begin.push_back(c);
  if (y.numel() == 0) return;
  std::shared_ptr<FoldedBatchNorm<float>> made;
  const FoldedBatchNorm<float>& folded = folded_batch_norm<float>(ctx, eps, made);
  const float *a = folded.a.data(), *b = folded.b.data();
  const BatchNormActivation<float> act = folded.act;
  float* yd = y.data<float>();
  if (activation_layout(*ctx.attrs).output && channels_last_tag(y.shape()) != dnnl::memory::format_tag::undef) {
    const int64_t tile = std::max<int64_t>(1, 8192 / c);  // 32 KiB of Y
    parallel_for(n * inner, std::max<int64_t>(1, 16384 / c), [&](int64_t r0, int64_t r1) {
      for (int64_t t0 = r0; t0 < r1; t0 += tile) {
        const int64_t rows = std::min(r1, t0 + tile) - t0;
        for (int64_t i = 0; i < parts; ++i) {
          const int64_t ci = begin[i + 1] - begin[i];
          if (ci > 0)
            batch_norm_channels_last_f32(src[i] + t0 * ci, ci, yd + t0 * c + begin[i], c, rows, ci, a + begin[i],
                                         b + begin[i], act);
        }
      }
    });
    return;
  }
  parallel_for(n * c, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t image = r / c, ch = r % c;
      const size_t i = static_cast<size_t>(std::upper_bound(begin.begin(), begin.end(), ch) - begin.begin()) - 1;
      const int64_t ci = begin[i + 1] - begin[i];
      batch_norm_plane(src[i] + (image * ci + ch - begin[i]) * inner, yd + r * inner, inner, a[ch], b[ch], act);
    }
  });
}

// BatchNormalization (inference, f32) reads X and writes Y in the channels-last layout, both
// or neither.
KernelDef::LayoutUse batch_norm_layout_use(const KernelContext& call) {
  bool ok = call.in(0).dtype() == DType::f32 && call.outputs.size() >= 1;
  for (size_t k = 1; k < call.outputs.size(); ++k) ok &= !call.outputs[k].defined();
  return {ok ? 1u : 0u, ok, true};
}

void batch_norm_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  double eps = ctx.attrs->get_float("epsilon");
  if (const int64_t parts = ctx.attrs->get_int("porta_concat", 1); parts > 1) return batch_norm_parts(ctx, parts, eps);
  int64_t n = x.dim(0), c = x.dim(1), inner = n * c == 0 ? 0 : x.numel() / (n * c);
  if (x.numel() == 0) return;
  if (x.dtype() == DType::f64) return batch_norm_affine<double>(ctx, n, c, inner, eps);
  batch_norm_affine<float>(ctx, n, c, inner, eps);
}

void instance_norm_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (x.numel() == 0) return;
  int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / (n * c);
  double eps = ctx.attrs->get_float("epsilon");
  if (x.dtype() == DType::f64) {
    const double* px = x.data<double>();
    double* py = ctx.out(0).data<double>();
    const double *scale = ctx.in(1).data<double>(), *bias = ctx.in(2).data<double>();
    parallel_for(n * c, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const double* row = px + r * inner;
        double mean = 0, var = 0;
        for (int64_t j = 0; j < inner; ++j) mean += row[j];
        mean /= static_cast<double>(inner);
        for (int64_t j = 0; j < inner; ++j) var += (row[j] - mean) * (row[j] - mean);
        double a = scale[r % c] / std::sqrt(var / static_cast<double>(inner) + eps);
        double b = bias[r % c] - mean * a;
        for (int64_t j = 0; j < inner; ++j) py[r * inner + j] = row[j] * a + b;
      }
    });
    return;
  }
  std::vector<float> scale(n * c), shift(n * c), mean(n * c), var(n * c);
  for (int64_t r = 0; r < n * c; ++r) {
    scale[r] = ctx.in(1).data<float>()[r % c];
    shift[r] = ctx.in(2).data<float>()[r % c];
  }
  // Statistics in double, two passes: oneDNN's f32 statistics drift on large instances (a
  // relative error of 1.9e-4 over 1.7M elements, found by porta_fuzz_ops); the primitive then
  // normalizes with them.
  const float* px = x.data<float>();
  parallel_for(n * c, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = px + r * inner;
      double sum = 0, sq = 0;
      for (int64_t j = 0; j < inner; ++j) sum += row[j];
      double m = inner ? sum / static_cast<double>(inner) : 0.0;
      for (int64_t j = 0; j < inner; ++j) sq += (row[j] - m) * (row[j] - m);
      mean[r] = static_cast<float>(m);
      var[r] = static_cast<float>(inner ? sq / static_cast<double>(inner) : 0.0);
    }
  });
  batch_norm_dnnl("InstanceNormalization", x.raw_data(), ctx.out(0).raw_data(), 1, n * c, inner,
                  scale.data(), shift.data(), mean.data(), var.data(), eps);
}

}  // namespace

namespace {
const bool batch_norm_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "BatchNormalization";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32 | kF64;
  k.fn = batch_norm_cpu;
  k.fused_activations = batch_norm_fused_activations();
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = batch_norm_layout_use;
  return k;
}());
}  // namespace
PORTA_REGISTER_KERNEL(InstanceNormalization, cpu, kF32 | kF64, instance_norm_cpu)

}  // namespace porta::cpu
