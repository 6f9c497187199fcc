// plugins/torch — CPU kernels of torch.ops.porta.*: porta's own CPU kernels, called on the
// torch tensors' memory (no copy for contiguous inputs; the output is porta's buffer, handed
// to torch without a copy). These kernels have no autograd formula: a CPU call on tensors
// that require grad gives a result without grad_fn.
#include "torch_bridge.hpp"

namespace porta_torch {
namespace {

at::Tensor rms_norm_cpu(const at::Tensor& x, const at::Tensor& scale, double epsilon) {
  return run_porta("RmsNorm", {x, scale}, {true, true}, porta::Attributes{{"epsilon", epsilon}});
}

at::Tensor bias_gelu_cpu(const at::Tensor& x, const at::Tensor& bias, c10::string_view approximate) {
  return run_porta("BiasGelu", {x, bias}, {true, true},
                   porta::Attributes{{"approximate", std::string(approximate)}});
}

at::Tensor sdpa_cpu(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                    const c10::optional<at::Tensor>& mask, c10::optional<double> scale, bool causal) {
  porta::Attributes a{{"causal", int64_t{causal ? 1 : 0}}};
  if (scale) a.set("scale", *scale);
  at::Tensor m = mask ? *mask : at::Tensor();
  return run_porta("ScaledDotProductAttention", {q, k, v, m}, {true, true, true, mask.has_value()}, a);
}

at::Tensor rotary_cpu(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool interleaved) {
  return run_porta("RotaryEmbedding", {x, cos, sin}, {true, true, true},
                   porta::Attributes{{"interleaved", int64_t{interleaved ? 1 : 0}}});
}

at::Tensor normalize_image_cpu(const at::Tensor& x, at::ArrayRef<double> mean, at::ArrayRef<double> std,
                               c10::string_view layout) {
  porta::Attributes a{{"mean", std::vector<double>(mean.begin(), mean.end())},
                      {"std", std::vector<double>(std.begin(), std.end())},
                      {"layout", std::string(layout)}};
  return run_porta("NormalizeImage", {x}, {true}, a);
}

}  // namespace
}  // namespace porta_torch

TORCH_LIBRARY_IMPL(porta, CPU, m) {
  m.impl("RmsNorm", porta_torch::rms_norm_cpu);
  m.impl("BiasGelu", porta_torch::bias_gelu_cpu);
  m.impl("ScaledDotProductAttention", porta_torch::sdpa_cpu);
  m.impl("RotaryEmbedding", porta_torch::rotary_cpu);
  m.impl("NormalizeImage", porta_torch::normalize_image_cpu);
}
