// porta vulkan shaders — what graph fusion folds into a Conv (runtime/graph_fusion.cpp): the
// residual it adds (`porta_residual`) and the activation after it (`porta_activation`), as
// Act(conv + residual). ops/fused_activation.hpp names the activations and defines their math;
// the including shader declares the specialization constant ACT (FusedActivation::Kind's order,
// kernels/vulkan/vk_kernel.hpp's Epilogue sets it) and passes the attributes alpha and beta.
// activation_of takes the kind as an argument, for shaders applying several (SqueezeExcite's
// activation and gate, each a specialization constant of its own, so the switch still folds).
// NaN stays NaN through each of them.
#include "float_math.glsl"

float activation_of(int kind, float x, float alpha, float beta) {
  switch (kind) {
    case 1: return x < 0.0 ? 0.0 : x;                                        // Relu
    case 2: { float v = x < alpha ? alpha : x; return v > beta ? beta : v; }  // Clip (max wins)
    case 3: return x >= 0.0 ? x : alpha * x;                                 // LeakyRelu
    case 4: return sigmoid(x);                                               // Sigmoid
    case 5: return tanh_stable(x);                                           // Tanh
    case 6: { float v = alpha * x + beta; return isnan(v) ? v : clamp(v, 0.0, 1.0); }  // HardSigmoid
    case 7: return isnan(x) ? x : x * clamp(x / 6.0 + 0.5, 0.0, 1.0);        // HardSwish
    case 8: return x > 0.0 ? x : alpha * (exp(x) - 1.0);                     // Elu
    case 9: return x * sigmoid(x);                                           // Swish
    case 10: return gelu_erf_form(x);                                        // Gelu
    case 11: return gelu_tanh_form(x);                                       // GeluTanh
  }
  return x;
}

float fused_activation(float x, float alpha, float beta) { return activation_of(ACT, x, alpha, beta); }
