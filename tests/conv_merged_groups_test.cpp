// Grouped convs of 4 input channels per group on the cpu at the AVX2 width, which run with
// pairs of groups merged into groups of 8 channels (block-diagonal weights: kernels/cpu/conv.cpp,
// group_merge): the float64 reference of the conv as written, in sessions whose activations
// are plain or channels-last, with a fused activation and residual, strides, batches, and the
// shapes that do not merge (an odd group count, weights that are not constant, 2 channels per
// group). An input holding an infinity or NaN must leave the other group of its pair finite:
// merged, the pair's zeros would multiply it (0 * inf is NaN), so such a call runs unmerged.
// Inputs and weights are fresh random values (seed printed on failure). The "grouped" kernel,
// which takes groups of 8 outputs, is disabled here.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/conv_common.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

struct GroupedCase {
  std::string label;
  Shape x;
  int64_t cout, group;
  Ints kernel{3, 3};
  Attributes attrs{{"pads", Ints{1, 1, 1, 1}}};
  bool merges = true;
  bool relu = false;
  bool residual = false;        // Conv + Add(r) [+ Relu]: the sum fused into the conv
  bool channels_last = false;   // a conv before and after, so the session keeps x and y channels-last
  bool weights_as_input = false;
};

// The case's constants (fresh random values), by name.
std::map<std::string, Tensor> weights_of(const GroupedCase& c) {
  Shape ws{c.cout, c.x[1] / c.group};
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  return {{"W0", random_f32({c.x[1], c.x[1], 1, 1})}, {"W", random_f32(ws)}, {"B", random_f32({c.cout})},
          {"W2", random_f32({5, c.cout, 1, 1})}, {"r", random_f32({c.x[0], c.cout, c.x[2], c.x[3]})}};
}

// The case's graph around `x`, with the constants `w` (weights_of). The cases with a residual
// keep the map (stride 1, pads 1), so r has the conv's output shape.
ReferenceGraph graph_of(const GroupedCase& c, const Tensor& x, const std::map<std::string, Tensor>& w) {
  ReferenceGraph g;
  g.input("x", x);
  std::string in = "x";
  if (c.channels_last) {
    g.initializer("W0", w.at("W0"));
    g.node("Conv", {"x", "W0"}, "x1");
    in = "x1";
  }
  if (c.weights_as_input) g.input("W", w.at("W"));
  else g.initializer("W", w.at("W"));
  g.initializer("B", w.at("B"));
  Attributes a = c.attrs;
  a.set("group", c.group);
  const std::string out = c.channels_last ? "y1" : "y";
  g.node("Conv", {in, "W", "B"}, c.relu || c.residual ? "conv" : out, a);
  if (c.residual) {
    g.input("r", w.at("r"));
    g.node("Add", {"conv", "r"}, c.relu ? "sum" : out);
  }
  if (c.relu) g.node("Relu", {c.residual ? "sum" : "conv"}, out);
  if (c.channels_last) {
    g.initializer("W2", w.at("W2"));
    g.node("Conv", {"y1", "W2"}, "y");
  }
  g.output("y");
  return g;
}

void expect_matches_reference(const GroupedCase& c) {
  SCOPED_TRACE(c.label + ", seed " + std::to_string(seed()));
  const uint64_t before = cpu::conv_merged_group_runs();
  run_against_reference(graph_of(c, random_f32(c.x), weights_of(c)), {"y"});
  const uint64_t runs = cpu::conv_merged_group_runs() - before;
  if (c.merges) EXPECT_GT(runs, 0u) << "the groups were not merged";
  else EXPECT_EQ(runs, 0u) << "merged a conv that should run as written";
}

TEST(ConvMergedGroups, MatchTheReference) {
  if (cpu::vector_bytes() < 32) GTEST_SKIP() << "this CPU has no AVX2: convs merge groups at its width only";
  VectorWidth width(32);
  DisabledKernels grouped("cpu:Conv:grouped");  // it takes the 8-outputs case: this tests onednn's merge
  const Attributes pads1{{"pads", Ints{1, 1, 1, 1}}};
  const std::vector<GroupedCase> cases{
      {"resnext-like, 4 groups of 4", {1, 16, 9, 7}, 16, 4},
      {"8 outputs per group", {1, 16, 5, 6}, 32, 4},
      {"batch 3, stride 2", {3, 16, 9, 8}, 16, 4, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}},
      {"1x1", {1, 32, 4, 4}, 32, 8, {1, 1}, {}},
      {"3x3 over 1x1 (taps cut, then merged)", {1, 16, 1, 1}, 16, 4},
      {"fused relu", {1, 16, 6, 6}, 16, 4, {3, 3}, pads1, true, true},
      {"fused residual and relu", {2, 16, 6, 5}, 16, 4, {3, 3}, pads1, true, true, true},
      {"channels-last between convs", {1, 32, 8, 8}, 32, 8, {3, 3}, pads1, true, true, false, true},
      {"channels-last with a residual", {1, 32, 7, 7}, 32, 8, {3, 3}, pads1, true, false, true, true},
      {"odd group count", {1, 12, 5, 5}, 12, 3, {3, 3}, pads1, false},
      {"2 channels per group", {1, 16, 5, 5}, 16, 8, {3, 3}, pads1, false},
      {"3 outputs per group", {1, 16, 5, 5}, 12, 4, {3, 3}, pads1, false},
      {"weights not constant", {1, 16, 5, 5}, 16, 4, {3, 3}, pads1, false, false, false, false, true},
  };
  for (const GroupedCase& c : cases) expect_matches_reference(c);
}

// An infinity in group 0's channels and a NaN in group 2's: their partners (groups 1 and 3)
// stay finite and exact. One session: its first call finite (merged, prepared), then
// poisoned (unmerged), then finite again (merged, the prepared call kept).
TEST(ConvMergedGroups, NonFiniteInputsRunUnmerged) {
  if (cpu::vector_bytes() < 32) GTEST_SKIP() << "this CPU has no AVX2: convs merge groups at its width only";
  VectorWidth width(32);
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const GroupedCase c{"non-finite", {1, 16, 6, 6}, 16, 4};
  const std::map<std::string, Tensor> w = weights_of(c);
  const Tensor finite = random_f32(c.x);
  Tensor poisoned = finite.clone();
  float* p = poisoned.data<float>();
  p[1 * 36 + 2 * 6 + 3] = std::numeric_limits<float>::infinity();  // channel 1 (group 0), pixel (2, 3)
  p[9 * 36 + 4 * 6 + 1] = std::numeric_limits<float>::quiet_NaN();  // channel 9 (group 2), pixel (4, 1)
  const ReferenceGraph good = graph_of(c, finite, w), bad = graph_of(c, poisoned, w);
  Session s(good.model());
  for (const ReferenceGraph* g : {&good, &bad, &good}) {
    const uint64_t before = cpu::conv_merged_group_runs();
    const Tensor y = s.run(g->inputs()).at(0);
    Comparison cmp = compare(y, g->reference("y"), 1e-5);
    EXPECT_TRUE(cmp.ok) << (g == &bad ? "poisoned: " : "finite: ") << cmp.message;
    EXPECT_EQ(cpu::conv_merged_group_runs() - before, g == &bad ? 0u : 1u);
  }
  // The partners of the poisoned groups: outputs 4..7 (group 1) and 12..15 (group 3) finite.
  const Tensor y = s.run(bad.inputs()).at(0);
  const std::vector<double> v = y.to_doubles();
  for (int64_t o : {4, 5, 6, 7, 12, 13, 14, 15})
    for (int64_t i = 0; i < 36; ++i) ASSERT_TRUE(std::isfinite(v[static_cast<size_t>(o * 36 + i)])) << "output " << o;
}

}  // namespace
}  // namespace porta::test
