// porta ops — the activations graph fusion folds into a producing op (Conv, MatMul, ...), as the
// porta-internal attributes `porta_activation` (name), `porta_activation_alpha` and
// `porta_activation_beta` (floats, default 0) describe them, and their scalar math in float64.
// This is the one definition of that math: the Conv reference applies it, the standalone
// activation ops' references (ops/activations.cpp) use the same functions, and the cpu
// kernel's oneDNN post-ops (kernels/cpu/fused_activation.hpp) are tested against it.
//
// Names (ONNX's op names, except Swish), with ONNX's definitions:
//   ""           none
//   Relu         max(x, 0)
//   Clip         min(max(x, alpha), beta); alpha = min, beta = max (-inf / +inf for a Clip
//                without that bound). When alpha > beta every value becomes beta, as Clip.
//   LeakyRelu    x >= 0 ? x : alpha * x
//   Sigmoid      1 / (1 + exp(-x))
//   Tanh         tanh(x)
//   HardSigmoid  max(0, min(1, alpha * x + beta))
//   HardSwish    x * max(0, min(1, x / 6 + 0.5))
//   Elu          x > 0 ? x : alpha * (exp(x) - 1)
//   Swish        x * Sigmoid(x) (porta-internal name for the pattern Mul(x, Sigmoid(x)), SiLU)
//   Gelu         0.5 * x * (1 + erf(x / sqrt(2))) (ONNX's Gelu, approximate = "none")
//   GeluTanh     0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) (approximate = "tanh")
// NaN stays NaN through each of them.
#pragma once
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "porta/attributes.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::opdef {

namespace act {

/// max(lo, min(hi, v)) that keeps NaN (std::clamp's result for NaN is unspecified).
inline double clamp_keep_nan(double v, double lo, double hi) {
  return std::isnan(v) ? v : v < lo ? lo : v > hi ? hi : v;
}
inline double relu(double x) { return x < 0.0 ? 0.0 : x; }
/// Clip's order: the lower bound first, then the upper (min > max gives max everywhere).
inline double clip(double x, double lo, double hi) {
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  return x;
}
inline double leaky_relu(double x, double alpha) { return x >= 0 ? x : alpha * x; }
inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double hard_sigmoid(double x, double alpha, double beta) { return clamp_keep_nan(alpha * x + beta, 0.0, 1.0); }
inline double hard_swish(double x) { return x * clamp_keep_nan(x / 6.0 + 0.5, 0.0, 1.0); }
inline double elu(double x, double alpha) { return x > 0 ? x : alpha * (std::exp(x) - 1.0); }
inline double swish(double x) { return x * sigmoid(x); }
/// PyTorch's two GELU formulas (ONNX Gelu's approximate "none" and "tanh").
inline double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
inline double gelu_tanh(double x) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

}  // namespace act

/// The activation a producing op applies to its output (parsed from its attributes).
struct FusedActivation {
  enum class Kind { none, relu, clip, leaky_relu, sigmoid, tanh, hard_sigmoid, hard_swish, elu, swish, gelu, gelu_tanh };
  Kind kind = Kind::none;
  std::string name;  ///< as in `porta_activation`
  double alpha = 0.0, beta = 0.0;

  bool active() const { return kind != Kind::none; }

  double operator()(double x) const {
    switch (kind) {
      case Kind::none: return x;
      case Kind::relu: return act::relu(x);
      case Kind::clip: return act::clip(x, alpha, beta);
      case Kind::leaky_relu: return act::leaky_relu(x, alpha);
      case Kind::sigmoid: return act::sigmoid(x);
      case Kind::tanh: return std::tanh(x);
      case Kind::hard_sigmoid: return act::hard_sigmoid(x, alpha, beta);
      case Kind::hard_swish: return act::hard_swish(x);
      case Kind::elu: return act::elu(x, alpha);
      case Kind::swish: return act::swish(x);
      case Kind::gelu: return act::gelu_erf(x);
      case Kind::gelu_tanh: return act::gelu_tanh(x);
    }
    return x;
  }
};

/// Every accepted `porta_activation` value, "" (none) first.
inline const std::vector<std::string>& fused_activation_names() {
  static const std::vector<std::string> names{"",          "Relu",      "Clip", "LeakyRelu", "Sigmoid", "Tanh",
                                              "HardSigmoid", "HardSwish", "Elu",  "Swish",     "Gelu",    "GeluTanh"};
  return names;
}

/// Parses the activation named by attribute `key` with its floats `key`_alpha and `key`_beta
/// (absent: "", 0, 0): by default a producing op's `porta_activation`, `porta_activation_alpha`
/// and `porta_activation_beta`; ops that apply several name each (SqueezeExcite's `activation`
/// and `gate`). Throws InvalidArgument naming the accepted values for an unknown name; `op`
/// prefixes the message.
inline FusedActivation parse_fused_activation(const Attributes& a, const char* op = "Conv",
                                              const std::string& key = "porta_activation") {
  FusedActivation f;
  f.name = a.get_string(key, "");
  f.alpha = a.get_float(key + "_alpha", 0.0);
  f.beta = a.get_float(key + "_beta", 0.0);
  using K = FusedActivation::Kind;
  static const K kinds[] = {K::none,         K::relu,       K::clip, K::leaky_relu, K::sigmoid, K::tanh,
                            K::hard_sigmoid, K::hard_swish, K::elu,  K::swish,      K::gelu,    K::gelu_tanh};
  const auto& names = fused_activation_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == f.name) {
      f.kind = kinds[i];
      return f;
    }
  std::string list;
  for (const auto& n : names) list += str(list.empty() ? "" : ", ", "\"", n, "\"");
  throw InvalidArgument(str("[", op, "] ", key, key.rfind("porta_", 0) == 0 ? " (porta-internal)" : "",
                            " must be one of ", list, "; got \"", f.name, "\""));
}

}  // namespace porta::opdef
