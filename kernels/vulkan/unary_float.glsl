// porta vulkan shaders — the float functions of the unary ops: unary_fn(op, x, alpha, beta,
// gamma) for the op codes of elementwise.hpp (UnaryOp), the op's scalar attributes in alpha,
// beta, gamma; and apply(x) = unary_fn(OP, ...) with the specialization constant OP and
// p.alpha, p.beta, p.gamma of the including shader (unary.comp, unary_texel.comp), unless it
// defines PORTA_UNARY_FN_ONLY (elementwise_chain.comp). op is a constant in every caller, so
// the switch folds away.
#include "float_math.glsl"

// erf with |error| < 1.5e-7 (Abramowitz & Stegun 7.1.26).
float erf_approx(float x) {
  float t = 1.0 / (1.0 + 0.3275911 * abs(x));
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t +
                   0.254829592) * t * exp(-x * x);
  return sign(x) * y;
}

float unary_fn(int op, float x, float alpha, float beta, float gamma) {
  switch (op) {
    case 0: return max(x, 0.0);                                  // Relu
    case 1: return abs(x);                                       // Abs
    case 2: return -x;                                           // Neg
    case 3: return exp(x);                                       // Exp
    case 4: return log(x);                                       // Log
    case 5: return sqrt(x);                                      // Sqrt
    case 6: return 1.0 / x;                                      // Reciprocal
    case 7: return tanh_stable(x);                               // Tanh
    case 8: return sigmoid(x);                                   // Sigmoid
    case 9: return x >= 0.0 ? x : alpha * x;                     // LeakyRelu
    case 10: return x >= 0.0 ? x : alpha * (exp(x) - 1.0);       // Elu
    case 11: return erf_approx(x);                               // Erf
    case 12: return sin(x);                                      // Sin
    case 13: return cos(x);                                      // Cos
    case 14: return floor(x);                                    // Floor
    case 15: return ceil(x);                                     // Ceil
    case 16: return sign(x);                                     // Sign
    case 17: return max(x, 0.0) + log(1.0 + exp(-abs(x)));       // Softplus
    case 18: return clamp(alpha * x + beta, 0.0, 1.0);           // HardSigmoid
    case 19: return roundEven(x);                                // Round (half to even)
    case 20: return x > 0.0 ? gamma * x : gamma * alpha * (exp(x) - 1.0);  // Selu
    case 21: return x * clamp(x / 6.0 + 0.5, 0.0, 1.0);          // HardSwish
    case 22: return tan(x);                                      // Tan
    case 23: return x / (1.0 + abs(x));                          // Softsign
    case 24: return min(max(x, alpha), beta);                    // Clip (max wins if min > max)
    case 25: return max(x, 0.0) + min(0.0, alpha * (exp(x / alpha) - 1.0));  // Celu
  }
  return x;
}

#ifndef PORTA_UNARY_FN_ONLY
float apply(float x) { return unary_fn(OP, x, p.alpha, p.beta, p.gamma); }
#endif
