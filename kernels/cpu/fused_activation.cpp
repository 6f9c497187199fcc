// porta cpu kernels — fused activations as oneDNN post-ops (kernels/cpu/fused_activation.hpp).
#include "kernels/cpu/fused_activation.hpp"

#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"

namespace porta::cpu {
namespace {

bool runs_after(const opdef::FusedActivation& act) {
  using K = opdef::FusedActivation::Kind;
  return act.kind == K::swish || act.kind == K::sigmoid || act.kind == K::gelu || act.kind == K::gelu_tanh;
}

}  // namespace

const std::vector<std::string>& cpu_fused_activations() {
  static const std::vector<std::string> names{"Relu",      "Clip", "LeakyRelu", "Sigmoid", "Tanh",    "HardSigmoid",
                                              "HardSwish", "Elu",  "Swish",     "Gelu",    "GeluTanh"};
  return names;
}

dnnl::post_ops fused_post_ops(const Attributes& attrs) {
  using K = opdef::FusedActivation::Kind;
  using dnnl::algorithm;
  const opdef::FusedActivation act = opdef::parse_fused_activation(attrs);
  const float alpha = static_cast<float>(act.alpha), beta = static_cast<float>(act.beta);
  dnnl::post_ops ops;
  if (runs_after(act)) return ops;
  auto add = [&](algorithm alg, float a, float b) { ops.append_eltwise(1.0f, alg, a, b); };
  switch (act.kind) {
    case K::none: break;
    case K::relu: add(algorithm::eltwise_relu, 0.0f, 0.0f); break;
    case K::leaky_relu: add(algorithm::eltwise_relu, alpha, 0.0f); break;
    // oneDNN refuses a clip with alpha > beta; Clip then gives max everywhere: clip(max, max).
    case K::clip: add(algorithm::eltwise_clip, alpha > beta ? beta : alpha, beta); break;
    case K::sigmoid: break;  // activation_after_primitive
    case K::tanh: add(algorithm::eltwise_tanh, 0.0f, 0.0f); break;
    case K::hard_sigmoid:
      add(algorithm::eltwise_linear, alpha, beta);
      add(algorithm::eltwise_clip, 0.0f, 1.0f);
      break;
    case K::hard_swish: add(algorithm::eltwise_hardswish, 1.0f / 6.0f, 0.5f); break;
    case K::elu: add(algorithm::eltwise_elu, alpha, 0.0f); break;
    case K::swish:  // activation_after_primitive
    case K::gelu:
    case K::gelu_tanh: break;
  }
  return ops;
}

opdef::FusedActivation activation_after_primitive(const Attributes& attrs) {
  opdef::FusedActivation act = opdef::parse_fused_activation(attrs);
  return runs_after(act) ? act : opdef::FusedActivation{};
}

void apply_activation(const opdef::FusedActivation& act, float* y, int64_t n) {
  using K = opdef::FusedActivation::Kind;
  if (act.kind == K::none) return;
  if (!runs_after(act))
    throw InvalidArgument(str("[cpu] activation ", act.name, " runs as oneDNN post-ops, not after the primitive"));
  parallel_for(n, int64_t{1} << 15, [&](int64_t b, int64_t e) {
    activate_f32(act, y + b, e - b);
  });
}

void activate_f32(const opdef::FusedActivation& act, float* y, int64_t n) {
  using K = opdef::FusedActivation::Kind;
  const float a = static_cast<float>(act.alpha), b = static_cast<float>(act.beta);
  switch (act.kind) {
    case K::none: return;
    case K::relu: return vmath::relu_clip_f32(y, n, 0.0f, std::numeric_limits<float>::infinity());
    case K::clip: return vmath::relu_clip_f32(y, n, a, b);
    case K::leaky_relu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] >= 0.0f ? y[i] : a * y[i];
      return;
    case K::sigmoid: return vmath::sigmoid_f32(y, y, n);
    case K::swish: return vmath::swish_f32(y, y, n);
    case K::gelu: return vmath::gelu_erf_f32(y, y, n);
    case K::gelu_tanh: return vmath::gelu_tanh_f32(y, y, n);
    case K::tanh: return vmath::tanh_f32(y, y, n);
    case K::hard_sigmoid:
      for (int64_t i = 0; i < n; ++i) {
        float v = a * y[i] + b;
        y[i] = std::isnan(v) ? v : v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
      }
      return;
    case K::hard_swish: return vmath::hard_swish_f32(y, n);
    case K::elu:
      for (int64_t i = 0; i < n; ++i) y[i] = y[i] > 0.0f ? y[i] : a * std::expm1(y[i]);
      return;
  }
}

void activate_tensor(Tensor& y, const opdef::FusedActivation& act) {
  if (!act.active() || y.numel() == 0) return;
  if (y.dtype() == DType::f64) {
    double* p = y.data<double>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = act(p[i]);
    return;
  }
  Tensor f = y.dtype() == DType::f32 ? y : y.cast(DType::f32);
  float* p = f.data<float>();
  parallel_for(f.numel(), int64_t{1} << 14, [&](int64_t b, int64_t e) { activate_f32(act, p + b, e - b); });
  if (y.dtype() != DType::f32) y.copy_(f.cast(y.dtype()));
}

void add_residual(float* y, const float* r, int64_t n, const opdef::FusedActivation& act) {
  parallel_for(n, int64_t{1} << 14, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] += r[i];
    activate_f32(act, y + b, e - b);
  });
}

KernelFn adding_residual(KernelFn fn) {
  return [fn = std::move(fn)](KernelContext& ctx) {
    size_t at = ctx.inputs.size();
    for (size_t i = 0; i < ctx.op->inputs.size() && i < ctx.inputs.size(); ++i)
      if (ctx.op->inputs[i].rfind("porta_residual", 0) == 0 && ctx.inputs[i].defined()) at = i;
    if (at == ctx.inputs.size()) return fn(ctx);
    const Tensor residual = ctx.inputs[at];
    const Attributes* attrs = ctx.attrs;
    const opdef::FusedActivation act = opdef::parse_fused_activation(*attrs, ctx.op->name.c_str());
    Attributes plain = *attrs;
    plain.set("porta_activation", std::string());
    ctx.attrs = &plain;
    ctx.inputs[at] = Tensor();
    try {
      fn(ctx);
    } catch (...) {
      ctx.attrs = attrs;
      ctx.inputs[at] = residual;
      throw;
    }
    ctx.attrs = attrs;
    ctx.inputs[at] = residual;
    Tensor& y = ctx.out(0);
    if (y.numel() == 0) return;
    if (y.dtype() == DType::f64) {
      const Tensor r = residual.cast(DType::f64).contiguous();
      double* py = y.data<double>();
      const double* pr = r.data<double>();
      for (int64_t i = 0; i < y.numel(); ++i) py[i] = act(py[i] + pr[i]);
      return;
    }
    // Half results through f32 (as the separate Add would have rounded its sum once).
    Tensor f = y.dtype() == DType::f32 ? y : y.cast(DType::f32);
    const Tensor r = residual.dtype() == DType::f32 ? residual.contiguous() : residual.cast(DType::f32);
    add_residual(f.data<float>(), r.data<float>(), f.numel(), act);
    if (y.dtype() != DType::f32) y.copy_(f.cast(y.dtype()));
  };
}

std::string fused_activation_key(const Attributes& attrs) {
  const opdef::FusedActivation act = opdef::parse_fused_activation(attrs);
  if (!act.active()) return "";
  std::string k = act.name;
  k += ':';
  key_append(k, act.alpha);
  k += ':';
  key_append(k, act.beta);
  return k;
}

}  // namespace porta::cpu
