// Convs over maps smaller than their kernel's reach (opdef::input_taps): which taps read the
// input, and that sessions whose kernels cut the other taps off (the cpu Conv with constant
// weights) still give the float64 reference of the conv as written — every rank, strides,
// dilations, groups, asymmetric pads, a fused activation, weights that are not constant, and
// the shapes where nothing may be cut. Inputs and weights are fresh random values (seed printed
// on failure), so a wrong cut or a wrong pad shift shows as a mismatch.
#include <optional>
#include <string>
#include <vector>

#include "ops/window.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

opdef::WindowGeometry geometry(const Shape& x, const Ints& kernel, const Attributes& a) {
  return opdef::window_geometry("Conv", x, kernel, a);
}

TEST(ConvInputTaps, WhichTapsReadTheInput) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  // 3x3, pads 1 over 1x1: the centre tap only.
  auto t = opdef::input_taps(geometry({1, 8, 1, 1}, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}}));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, (Ints{1, 1}));
  EXPECT_EQ(t->last, (Ints{1, 1}));
  // 1x7, pads (0, 3) over 2x2: columns 2..4 (outputs 0 and 1 read columns k-3+o in [0, 2)).
  t = opdef::input_taps(geometry({1, 8, 2, 2}, {1, 7}, {{"pads", Ints{0, 3, 0, 3}}}));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, (Ints{0, 2}));
  EXPECT_EQ(t->last, (Ints{0, 4}));
  // Stride 2 over 2x2, pads 1: the one output reads taps 1 and 2.
  t = opdef::input_taps(geometry({1, 8, 2, 2}, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, (Ints{1, 1}));
  EXPECT_EQ(t->last, (Ints{2, 2}));
  // Dilation 2, pads 2 over 2x2: the centre tap (the others land two pixels out).
  t = opdef::input_taps(geometry({1, 8, 2, 2}, {3, 3}, {{"pads", Ints{2, 2, 2, 2}}, {"dilations", Ints{2, 2}}}));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, (Ints{1, 1}));
  EXPECT_EQ(t->last, (Ints{1, 1}));
  // Nothing to cut: every tap of a 3x3 over 2x2 with pads 1 reads some input; no pads.
  EXPECT_FALSE(opdef::input_taps(geometry({1, 8, 2, 2}, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}})));
  EXPECT_FALSE(opdef::input_taps(geometry({1, 8, 5, 5}, {3, 3}, {})));
  // Cutting tap 0 would need a pad of 1 - 1*2 < 0 (dilation 2, pad 1, stride 2, 1 pixel out).
  EXPECT_FALSE(opdef::input_taps(
      geometry({1, 8, 2, 1}, {2, 1}, {{"pads", Ints{1, 0, 1, 0}}, {"dilations", Ints{2, 1}}, {"strides", Ints{3, 1}}})));
  // No tap reads the input on an axis (the output is the bias there): left alone.
  EXPECT_FALSE(opdef::input_taps(geometry({1, 8, 1, 1}, {3, 3}, {{"pads", Ints{3, 3, 3, 3}}, {"strides", Ints{5, 5}}})));
}

struct ConvCase {
  std::string label;
  Shape x;
  Ints kernel;
  Attributes attrs;
  int64_t cout = 6;
  int64_t group = 1;
  bool relu = false;
  bool weights_as_input = false;  // not a session constant: nothing is cut
};

void expect_matches_reference(const ConvCase& c) {
  SCOPED_TRACE(c.label + ", seed " + std::to_string(seed()));
  ReferenceGraph g;
  g.input("x", random_f32(c.x));
  Shape ws{c.cout, c.x[1] / c.group};
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  if (c.weights_as_input) g.input("W", random_f32(ws));
  else g.initializer("W", random_f32(ws));
  g.initializer("B", random_f32({c.cout}));
  Attributes a = c.attrs;
  if (c.group != 1) a.set("group", c.group);
  g.node("Conv", {"x", "W", "B"}, c.relu ? "conv" : "y", a);
  if (c.relu) g.node("Relu", {"conv"}, "y");
  g.output("y");
  run_against_reference(g, {"y"});  // runs twice: the second call takes the prepared step
}

TEST(ConvInputTaps, CutConvsMatchTheReference) {
  const Attributes pads1{{"pads", Ints{1, 1, 1, 1}}};
  std::vector<ConvCase> cases{
      {"3x3 over 1x1 (inception_v3's last blocks)", {1, 40, 1, 1}, {3, 3}, pads1, 24},
      {"3x3 over 1x1, batch 3", {3, 17, 1, 1}, {3, 3}, pads1, 5},
      {"1x7 over 2x2", {1, 16, 2, 2}, {1, 7}, {{"pads", Ints{0, 3, 0, 3}}}, 8},
      {"7x1 over 3x2", {1, 16, 3, 2}, {7, 1}, {{"pads", Ints{3, 0, 3, 0}}}, 8},
      {"asymmetric pads over 1x3", {1, 9, 1, 3}, {3, 5}, {{"pads", Ints{2, 1, 0, 3}}}, 7},
      {"stride 2 over 2x2", {1, 12, 2, 2}, {3, 3}, {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}}, 10},
      {"dilation 2 over 2x2", {1, 12, 2, 2}, {3, 3}, {{"pads", Ints{2, 2, 2, 2}}, {"dilations", Ints{2, 2}}}, 10},
      {"stride 3 leaves a gap", {1, 4, 4, 4}, {5, 5}, {{"pads", Ints{4, 4, 4, 4}}, {"strides", Ints{3, 3}}}, 3},
      {"grouped", {1, 16, 1, 1}, {3, 3}, pads1, 8, 4},
      {"depthwise", {1, 16, 1, 2}, {3, 3}, pads1, 16, 16},
      {"fused relu", {1, 32, 1, 1}, {3, 3}, pads1, 32, 1, true},
      {"1-D", {2, 6, 2}, {7}, {{"pads", Ints{3, 3}}}, 5},
      {"3-D", {1, 4, 1, 2, 1}, {3, 3, 3}, {{"pads", Ints{1, 1, 1, 1, 1, 1}}}, 6},
      {"SAME_UPPER", {1, 8, 1, 1}, {3, 3}, {{"auto_pad", std::string("SAME_UPPER")}}, 4},
      {"weights not constant", {1, 8, 1, 1}, {3, 3}, pads1, 4, 1, false, true},
      {"nothing to cut", {1, 8, 5, 5}, {3, 3}, pads1, 4},
  };
  for (const ConvCase& c : cases) expect_matches_reference(c);
}

}  // namespace
}  // namespace porta::test
