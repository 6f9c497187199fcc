// Broadcasting elementwise ops on cpu walk their operands run by run along the longest axis
// that every operand walks as one (kernels/cpu/cpu_common.cpp, BroadcastIter: adjacent axes
// merged, extent-1 axes dropped). Every shape pair below checks Add, Mul, Sub and Where
// against the float64 reference: per-channel scales of NCHW activations ([C,1,1] and
// [1,C,1,1] against [N,C,H,W]), broadcasts on the innermost axis, on the middle axes only,
// operands with extent-1 axes between broadcast ones, rank differences, and empty outputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Pair {
  Shape a, b;
};

TEST(BroadcastCpu, EveryRunMatchesTheReference) {
  const std::vector<Pair> pairs = {
      {{96, 1, 1}, {1, 96, 16, 16}},   // convnext's layer scale
      {{1, 96, 16, 16}, {1, 96, 1, 1}},
      {{2, 3, 5, 7}, {3, 1, 1}},
      {{2, 3, 5, 7}, {7}},             // innermost
      {{2, 3, 5, 7}, {1, 3, 5, 1}},    // middle axes only
      {{2, 3, 5, 7}, {2, 1, 1, 7}},    // outer and inner, not the middle
      {{2, 1, 5, 1, 4}, {1, 6, 1, 3, 1}},  // both broadcast, alternating
      {{1, 1, 1}, {4, 1, 9}},
      {{4, 1, 9}, {4, 8, 9}},
      {{3, 4, 1}, {1, 4, 2}},
      {{2, 0, 3}, {1, 1, 3}},          // empty
      {{5}, {3, 1}},
  };
  for (const Pair& p : pairs) {
    SCOPED_TRACE(shape_str(p.a) + " and " + shape_str(p.b) + " (seed " + std::to_string(seed()) + ")");
    std::vector<Tensor> in = {random_f32(p.a), random_f32(p.b)};
    std::vector<Tensor> in64 = {in[0].cast(DType::f64), in[1].cast(DType::f64)};
    for (const char* op : {"Add", "Mul", "Sub"}) {
      SCOPED_TRACE(op);
      Tensor got = call_op(op, in, {}).at(0);
      Tensor want = reference_op(op, in64, {}, 1).at(0);
      Comparison c = compare(got, want, 1e-6);
      EXPECT_TRUE(c.ok) << c.message;
    }
    // Where with a condition of its own broadcast shape.
    Shape cs = p.a.size() >= p.b.size() ? p.b : p.a;
    std::vector<double> flags(static_cast<size_t>(shape_numel(cs)));
    for (size_t i = 0; i < flags.size(); ++i) flags[i] = (i * 7 + 3) % 5 < 2 ? 1.0 : 0.0;
    Tensor cond = Tensor::from_values(flags, cs, DType::boolean);
    Tensor got = call_op("Where", {cond, in[0], in[1]}, {}).at(0);
    Tensor want = reference_op("Where", {cond, in64[0], in64[1]}, {}, 1).at(0);
    Comparison c = compare(got, want, 0.0);
    EXPECT_TRUE(c.ok) << "Where: " << c.message;
  }
}

}  // namespace
}  // namespace porta::test
