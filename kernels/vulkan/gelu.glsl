// porta vulkan shaders — GELU (bias_gelu.comp, gelu_texel.comp): gelu(h) for TANH (the
// including shader's specialization constant: PyTorch's tanh approximation, else the exact erf
// form); the two forms are float_math.glsl's.
#include "float_math.glsl"

float gelu(float h) { return TANH != 0 ? gelu_tanh_form(h) : gelu_erf_form(h); }
