// porta vulkan shaders — the float functions of the binary ops: binary_fn(op, x, y) for the op
// codes of elementwise.hpp (BinaryOp), and apply(x, y) = binary_fn(OP, x, y) with the
// specialization constant OP of the including shader (binary.comp, binary_texel.comp), unless it
// defines PORTA_BINARY_FN_ONLY (elementwise_chain.comp).
// pow with ONNX/C semantics for negative bases and integral exponents.
float pow_c(float x, float y) {
  if (y == 0.0) return 1.0;
  if (isnan(x) || isnan(y)) return x + y;
  if (x == 0.0) return y > 0.0 ? 0.0 : (y == floor(y) && mod(abs(y), 2.0) == 1.0 ? 1.0 / x : 1.0 / 0.0);
  float r = exp2(y * log2(abs(x)));
  if (x < 0.0) {
    if (y != floor(y)) return 0.0 / 0.0;
    if (mod(abs(y), 2.0) == 1.0) r = -r;
  }
  return r;
}

float binary_fn(int op, float x, float y) {
  switch (op) {
    case 0: return x + y;                                         // Add
    case 1: return x - y;                                         // Sub
    case 2: return x * y;                                         // Mul
    case 3: return x / y;                                         // Div
    case 4: return pow_c(x, y);                                   // Pow
    case 5: return isnan(x) || isnan(y) ? x + y : max(x, y);      // Max
    case 6: return isnan(x) || isnan(y) ? x + y : min(x, y);      // Min
    case 7:                                                       // Mod, fmod = 1 (C fmod)
    case 9: {                                                     // Mod, fmod = 0 (numpy.mod)
      float r = fma(-y, trunc(x / y), x);
      // x / y rounded up to the next integer leaves r one |y| past x's side of zero.
      if (r != 0.0 && (r < 0.0) != (x < 0.0)) r += x < 0.0 ? -abs(y) : abs(y);
      if (op == 9 && r != 0.0 && ((r < 0.0) != (y < 0.0))) r += y;
      return r;
    }
    case 8: return x < 0.0 ? y * x : x;                           // PRelu (slope broadcast)
  }
  return x;
}

#ifndef PORTA_BINARY_FN_ONLY
float apply(float x, float y) { return binary_fn(OP, x, y); }
#endif
