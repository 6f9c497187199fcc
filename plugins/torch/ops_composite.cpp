// plugins/torch — CompositeImplicitAutograd kernels of torch.ops.porta.*: the same formulas
// written with PyTorch ops, so the ops run (and differentiate) on devices porta does not serve
// (CUDA tensors in a PyTorch without porta's CUDA backend, meta tensors, ...). CPU calls go to
// porta's kernels (ops_cpu.cpp), which take precedence for the CPU dispatch key.
#include <cmath>

#include "torch_bridge.hpp"

namespace porta_torch {
namespace {

at::Tensor rms_norm_composite(const at::Tensor& x, const at::Tensor& scale, double epsilon) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + epsilon) * scale;
}

at::Tensor bias_gelu_composite(const at::Tensor& x, const at::Tensor& bias, c10::string_view approximate) {
  TORCH_CHECK(approximate == "none" || approximate == "tanh",
              "[BiasGelu] approximate should be 'none' or 'tanh', got '", approximate, "'");
  return at::gelu(x + bias, approximate);
}

at::Tensor sdpa_composite(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          const c10::optional<at::Tensor>& mask, c10::optional<double> scale, bool causal) {
  double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * s;
  if (mask) scores = scores + *mask;
  if (causal) {
    at::Tensor hidden = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(hidden, -std::numeric_limits<double>::infinity());
  }
  return at::matmul(at::softmax(scores, -1), v);
}

at::Tensor rotary_composite(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, bool interleaved) {
  int64_t half = x.size(-1) / 2;
  if (!interleaved) {
    at::Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
    return at::cat({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1);
  }
  at::Tensor x1 = x.slice(-1, 0, x.size(-1), 2), x2 = x.slice(-1, 1, x.size(-1), 2);
  return at::stack({x1 * cos - x2 * sin, x2 * cos + x1 * sin}, -1).flatten(-2);
}

at::Tensor normalize_image_composite(const at::Tensor& x, at::ArrayRef<double> mean, at::ArrayRef<double> std,
                                     c10::string_view layout) {
  TORCH_CHECK(layout == "NCHW" || layout == "NHWC",
              "[NormalizeImage] layout should be 'NCHW' or 'NHWC', got '", layout, "'");
  at::Tensor nchw = layout == "NHWC" ? x.permute({0, 3, 1, 2}) : x;
  auto opts = x.options().dtype(at::kFloat);
  at::Tensor m = at::tensor(std::vector<double>(mean.begin(), mean.end()), opts).view({1, -1, 1, 1});
  at::Tensor s = at::tensor(std::vector<double>(std.begin(), std.end()), opts).view({1, -1, 1, 1});
  return ((nchw.to(at::kFloat) / 255.0 - m) / s).contiguous();
}

}  // namespace
}  // namespace porta_torch

TORCH_LIBRARY_IMPL(porta, CompositeImplicitAutograd, m) {
  m.impl("RmsNorm", porta_torch::rms_norm_composite);
  m.impl("BiasGelu", porta_torch::bias_gelu_composite);
  m.impl("ScaledDotProductAttention", porta_torch::sdpa_composite);
  m.impl("RotaryEmbedding", porta_torch::rotary_composite);
  m.impl("NormalizeImage", porta_torch::normalize_image_composite);
}
