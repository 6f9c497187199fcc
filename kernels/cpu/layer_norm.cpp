// LayerNormalization on cpu: oneDNN's layer_normalization over X seen as outer x inner
// (inner = product of X.shape[axis:]), with Scale / B expanded to inner when they broadcast.
// When Mean / InvStdDev are asked for, the primitive runs in training mode so it hands out
// its mean and variance; InvStdDev = 1 / sqrt(variance + epsilon). f64 runs a plain loop.
#include <cmath>

#include "kernels/cpu/dnn_util.hpp"
#include "ops/common.hpp"

namespace porta::cpu {
namespace {

using LayerNormPrimitive = MaybePrimitive<dnnl::layer_normalization_forward>;

bool wants(const KernelContext& ctx, size_t i) { return ctx.outputs.size() > i && ctx.outputs[i].defined(); }

void layer_norm_loop(KernelContext& ctx, const double* scale, const double* bias, int64_t outer,
                     int64_t inner, double eps) {
  const double* x = ctx.in(0).data<double>();
  double* y = ctx.out(0).data<double>();
  float* mean_out = wants(ctx, 1) ? ctx.out(1).data<float>() : nullptr;
  float* inv_out = wants(ctx, 2) ? ctx.out(2).data<float>() : nullptr;
  parallel_for(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const double* row = x + r * inner;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += row[j];
      mean /= static_cast<double>(inner);
      for (int64_t j = 0; j < inner; ++j) var += (row[j] - mean) * (row[j] - mean);
      double inv = 1.0 / std::sqrt(var / static_cast<double>(inner) + eps);
      for (int64_t j = 0; j < inner; ++j)
        y[r * inner + j] = (row[j] - mean) * inv * scale[j] + (bias ? bias[j] : 0.0);
      if (mean_out) mean_out[r] = static_cast<float>(mean);
      if (inv_out) inv_out[r] = static_cast<float>(inv);
    }
  });
}

void layer_norm_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "LayerNormalization");
  Shape norm(x.shape().begin() + axis, x.shape().end());
  int64_t inner = shape_numel(norm), outer = inner == 0 ? 0 : x.numel() / inner;
  if (x.numel() == 0) return;
  double eps = ctx.attrs->get_float("epsilon");
  Tensor scale = ctx.in(1).expand(norm).contiguous();
  Tensor bias = ctx.has_input(2) ? ctx.in(2).expand(norm).contiguous() : Tensor();
  if (x.dtype() == DType::f64)
    return layer_norm_loop(ctx, scale.data<double>(), bias.defined() ? bias.data<double>() : nullptr,
                           outer, inner, eps);
  bool stats = wants(ctx, 1) || wants(ctx, 2);
  Shape view{outer, inner};
  auto p = cached<LayerNormPrimitive>(dnn_key("layer_norm", x.dtype(), view, stats, bias.defined(), eps), [&] {
    auto r = std::make_shared<LayerNormPrimitive>();
    try {
      auto flags = dnnl::normalization_flags::use_scale;
      if (bias.defined()) flags = flags | dnnl::normalization_flags::use_shift;
      dnnl::layer_normalization_forward::desc d(
          stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
          plain_desc(view, x.dtype()), static_cast<float>(eps), flags);
      r->pd = dnnl::layer_normalization_forward::primitive_desc(d, engine());
      r->prim = dnnl::layer_normalization_forward(r->pd);
      r->ok = true;
    } catch (const dnnl::error& e) {
      r->why = e.what();
    }
    return r;
  });
  if (!p->ok)
    throw BackendError(str("[LayerNormalization] oneDNN refused ", dtype_name(x.dtype()), " ",
                           shape_str(view), ": ", p->why));
  auto vec = plain_desc({inner}, DType::f32);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), x.raw_data())},
                                             {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), ctx.out(0).raw_data())},
                                             {DNNL_ARG_SCALE, wrap_ptr(vec, scale.raw_data())}};
  if (bias.defined()) args.emplace(DNNL_ARG_SHIFT, wrap_ptr(vec, bias.raw_data()));
  Tensor mean, var;
  if (stats) {
    mean = wants(ctx, 1) ? ctx.out(1) : Tensor::empty({outer}, DType::f32);
    var = wants(ctx, 2) ? ctx.out(2) : Tensor::empty({outer}, DType::f32);
    args.emplace(DNNL_ARG_MEAN, wrap_ptr(p->pd.mean_desc(), mean.raw_data()));
    args.emplace(DNNL_ARG_VARIANCE, wrap_ptr(p->pd.variance_desc(), var.raw_data()));
  }
  execute(p->prim, args);
  if (wants(ctx, 2)) {  // variance -> 1 / sqrt(variance + epsilon), in place
    float* v = var.data<float>();
    for (int64_t i = 0; i < outer; ++i) v[i] = 1.0f / std::sqrt(v[i] + static_cast<float>(eps));
  }
}

}  // namespace

PORTA_REGISTER_KERNEL(LayerNormalization, cpu, kF32 | kF64, layer_norm_cpu)

}  // namespace porta::cpu
