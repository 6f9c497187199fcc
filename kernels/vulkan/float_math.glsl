// porta vulkan shaders — float functions several shaders share (unary_float.glsl, activation.glsl).
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

#endif
