// porta vulkan shaders — float functions several shaders share (unary_float.glsl, activation.glsl,
// gelu.glsl).
#ifndef PORTA_FLOAT_MATH_GLSL
#define PORTA_FLOAT_MATH_GLSL

// tanh without overflow for large |x| and without cancellation near 0.
float tanh_stable(float x) {
  float a = abs(x);
  if (a < 0.0625) {
    float x2 = x * x;
    return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))));
  }
  float e = exp(-2.0 * a);
  return sign(x) * (1.0 - e) / (1.0 + e);
}

float sigmoid(float x) {
  if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
  float e = exp(x);
  return e / (1.0 + e);
}

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

// GELU's two forms (gelu.glsl's gelu picks one by TANH; activation.glsl's Gelu and GeluTanh).
// Both compute 1 + erf(z) (or 1 + tanh(u)) without cancelling for negative inputs: the
// complement is evaluated directly, so the far negative tail keeps its relative precision.
// NaN stays NaN.
float gelu_erf_form(float h) {
  float y = 0.5 * h * one_plus_erf(h * 0.7071067811865476);
  return isnan(h) ? h : y;
}
float gelu_tanh_form(float h) {
  float y = 0.5 * h * one_plus_tanh(0.7978845608028654 * (h + 0.044715 * h * h * h));
  return isnan(h) ? h : y;
}

#endif
