// Helpers shared by the compute-precision tests (precision_test.cpp, precision_check_test.cpp).
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

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

// A result computed in `low` from f32 data whose products have `k` terms: each product has
// relative error up to 2u from rounding its factors to `low`, rounding the result adds u, and
// the f32 sums of k products grow the error as sqrt(k) does for random signs. The bound is
// 3u sqrt(k), as relative L2 error (compare's rel). From below: a result of 8 or more elements
// must show the format's rounding (more than u/16), else the products did not run in `low`.
inline void expect_low_precision_result(const Tensor& got, const Tensor& reference, DType low, int64_t k,
                                 const std::string& what) {
  const double u = unit_roundoff(low);
  const double bound = 3 * u * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  ASSERT_EQ(got.dtype(), DType::f32) << what << ": outputs keep the exported dtype";
  Comparison c = compare(got, reference, bound);
  EXPECT_TRUE(c.ok) << what << ": " << c.message << " (bound " << bound << ")";
  // A handful of elements can round luckily (one product: 1 in 10 runs fell under u/16); from
  // 8 on, the format's rounding always shows.
  if (got.numel() >= 8) EXPECT_GT(c.rel, u / 16) << what << ": as accurate as f32, so not computed in " << dtype_name(low);
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
