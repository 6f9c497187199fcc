// porta vulkan shaders — GELU (bias_gelu.comp, gelu_texel.comp): gelu(h) for TANH (the
// including shader's specialization constant: PyTorch's tanh approximation, else the exact erf
// form). Both forms compute 1 + erf(z) (or 1 + tanh(u)) without cancelling for negative inputs:
// the complement is evaluated directly, so the far negative tail keeps its relative precision.
// NaN stays NaN.
// 1 + erf(z) for any z. erfc(|z|) from Abramowitz & Stegun 7.1.26 (|error of erf| < 1.5e-7):
// erf(|z|) = 1 - q, so 1 + erf(z) is 2 - q for z >= 0 and q for z < 0.
float one_plus_erf(float z) {
  float a = abs(z);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float q = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t *
            exp(-a * a);
  return z >= 0.0 ? 2.0 - q : q;
}

// 1 + tanh(u) = 2 / (1 + e) for u >= 0 and 2e / (1 + e) for u < 0, with e = exp(-2|u|) <= 1.
float one_plus_tanh(float u) {
  float e = exp(-2.0 * abs(u));
  return u >= 0.0 ? 2.0 / (1.0 + e) : 2.0 * e / (1.0 + e);
}

float gelu(float h) {
  float y;
  if (TANH != 0) y = 0.5 * h * one_plus_tanh(0.7978845608028654 * (h + 0.044715 * h * h * h));
  else y = 0.5 * h * one_plus_erf(h * 0.7071067811865476);
  return isnan(h) ? h : y;
}
