// Helpers shared by the compute-precision tests (precision_test.cpp, precision_check_test.cpp).
#pragma once
#include <cmath>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {

// Unit roundoff of a format: bf16 keeps 8 significant bits, f16 11.
inline double unit_roundoff(DType t) { return t == DType::bf16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11); }

inline SessionOptions with_precision(Precision p, Device d = Device::cpu()) {
  SessionOptions o;
  o.device = d;
  o.precision = p;
  return o;
}

// x -> MatMul(W1) = h -> Softmax -> MatMul(W2) -> LayerNormalization -> y, with h a graph
// output too: the policy's example (products low, Softmax and the norm in f32).
inline ReferenceGraph policy_graph(int64_t m, int64_t k) {
  ReferenceGraph g;
  g.input("x", random_f32({m, k}));
  g.initializer("w1", random_f32({k, 48}));
  g.initializer("w2", random_f32({48, 40}));
  g.initializer("scale", random_f32({40}, 0.5, 1.5));
  g.initializer("bias", random_f32({40}));
  g.node("MatMul", {"x", "w1"}, "h");
  g.node("Softmax", {"h"}, "s", {{"axis", int64_t{-1}}});
  g.node("MatMul", {"s", "w2"}, "t");
  g.node("LayerNormalization", {"t", "scale", "bias"}, "y", {{"axis", int64_t{-1}}});
  g.output("y");
  g.output("h");
  return g;
}

}  // namespace porta::test
