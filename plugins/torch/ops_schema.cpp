// plugins/torch — the torch.ops.porta.* schemas: the five ai.porta ops with the same inputs,
// attributes (as keyword arguments with the ONNX defaults) and semantics as their ONNX
// definitions in ops/*.cpp.
#include "torch_bridge.hpp"

TORCH_LIBRARY(porta, m) {
  m.def("RmsNorm(Tensor X, Tensor Scale, float epsilon=1e-06) -> Tensor");
  m.def("BiasGelu(Tensor X, Tensor Bias, str approximate='none') -> Tensor");
  m.def("ScaledDotProductAttention(Tensor Q, Tensor K, Tensor V, Tensor? Mask=None, float? scale=None, "
        "bool causal=False) -> Tensor");
  m.def("RotaryEmbedding(Tensor X, Tensor Cos, Tensor Sin, bool interleaved=False) -> Tensor");
  m.def("NormalizeImage(Tensor X, float[] mean, float[] std, str layout='NCHW') -> Tensor");
}
