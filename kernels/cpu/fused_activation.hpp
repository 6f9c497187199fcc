// porta cpu kernels — a producer's fused activation (the porta-internal attributes
// `porta_activation`, `porta_activation_alpha`, `porta_activation_beta` that graph fusion sets;
// names and math in ops/fused_activation.hpp) as oneDNN post-ops of its primitive.
#pragma once
#include <string>
#include <vector>

#include "kernels/cpu/dnn_util.hpp"
#include "ops/fused_activation.hpp"
#include "porta/attributes.hpp"

namespace porta::cpu {

/// The activation names the post-ops below implement: what a kernel that applies
/// fused_post_ops declares as KernelDef::fused_activations.
const std::vector<std::string>& cpu_fused_activations();

/// The post-ops computing the attributes' activation on a primitive's f32 output (none for "",
/// and none for the activations that activation_after_primitive below takes instead):
///   Relu        eltwise_relu (alpha 0)
///   LeakyRelu   eltwise_relu (alpha = slope: s > 0 ? s : alpha * s; equal to ONNX's x >= 0 form)
///   Clip        eltwise_clip (alpha = min, beta = max; infinite for a missing bound). oneDNN 2.6's
///               clip and clip_v2 compute the same forward, max(s, alpha) then min(., beta)
///               (ONNX's order); they differ only in backward at the bounds. oneDNN refuses
///               alpha > beta, where Clip gives max everywhere: that is clip(max, max).
///   Tanh        eltwise_tanh
///   HardSigmoid eltwise_linear (alpha * s + beta) then eltwise_clip (0, 1): oneDNN 2.6 has no
///               hardsigmoid
///   HardSwish   eltwise_hardswish: 2.6 computes s * min(max(s + 3, 0), 6) / 6 (ONNX's
///               x * max(0, min(1, x / 6 + 0.5)), up to rounding) and ignores alpha and beta;
///               alpha = 1/6 and beta = 1/2 are passed anyway, since later oneDNN versions
///               compute s * max(0, min(1, alpha * s + beta)) with them
///   Elu         eltwise_elu (alpha)
///   Sigmoid, Swish, Gelu, GeluTanh: porta's loop after the primitive (activation_after_primitive)
/// Throws InvalidArgument for an unknown name (as Conv's inference does). NaN outputs of the
/// primitive may leave a Clip or HardSigmoid as a bound rather than NaN.
dnnl::post_ops fused_post_ops(const Attributes& attrs);

/// The attributes' activation when the kernel applies it itself, over the primitive's output
/// after the primitive ran (kind none otherwise): Gelu and GeluTanh (vmath's gelu loops, those
/// of the standalone Gelu kernel), Swish and Sigmoid, whose oneDNN 2.6 post-ops
/// (eltwise_swish, eltwise_logistic) measured slower than the conv they follow. In
/// efficientnet_b0 at 64x64, one thread, the 27 swish post-ops took 496 us over their convs'
/// 460 us (ic16->oc96 at 32x32: conv 33 us, conv+swish 136 us), where vmath::swish_f32 over the
/// still-cached output takes a fraction of that.
opdef::FusedActivation activation_after_primitive(const Attributes& attrs);

/// Applies such an activation in place over n floats (elementwise: any layout), split across
/// threads when large.
void apply_activation(const opdef::FusedActivation& act, float* y, int64_t n);

/// Applies any fused activation in place over n floats on the calling thread, in float with
/// the formulas of ops/fused_activation.hpp (Sigmoid, Swish and Tanh with vmath's loops): for
/// kernels that compute the product themselves and finish it without a primitive.
void activate_f32(const opdef::FusedActivation& act, float* y, int64_t n);

/// Applies any fused activation in place over y (f32 in parallel chunks, f64 with
/// ops/fused_activation.hpp's double math, bf16/f16 through f32): for kernels that finish a
/// result without a primitive, or after one (MatMul's loops, Gemm).
void activate_tensor(Tensor& y, const opdef::FusedActivation& act);

/// y = Act(y + r) over n floats of one layout, split across threads when large: a fused
/// residual added after a primitive or loop that did not take it.
void add_residual(float* y, const float* r, int64_t n, const opdef::FusedActivation& act);

/// A MatMul or Gemm kernel that also takes a fused residual (the porta-internal input
/// `porta_residual`, ops/matmul.cpp): `fn` computes the call without the residual and without
/// the fused activation, then Y = Act(Y + residual) in one pass over Y while it is in cache
/// (f32; f64 in double; half results through f32, rounded once). A call without a residual
/// runs `fn` as it is.
KernelFn adding_residual(KernelFn fn);

/// The part of a primitive cache key that the fused activation decides ("" for none; else the
/// name with alpha and beta exactly).
std::string fused_activation_key(const Attributes& attrs);

}  // namespace porta::cpu
