// Padding-only taps (runtime/graph_fusion.hpp, trim_padding_taps): a Conv whose kernel reaches
// past its input on every output position runs over the taps that read the input alone, on
// every device, and the session still equals the float64 reference of the graph as written
// (and the same session with PORTA_FUSE=0). Convs every tap of which reads the input at some
// output position, and those whose cut pads would go negative or that no tap reaches, stay as
// written.
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

struct ConvCase {
  std::string label;
  Shape x, w;
  Attributes attrs;
  std::string taps;  // the kernel the plan computes ("3x3 taps of its ..."), "" when not trimmed
};

ReferenceGraph conv_graph(const ConvCase& c, bool bias) {
  ReferenceGraph g;
  g.input("x", random_f32(c.x, -2, 2));
  g.initializer("w", random_f32(c.w, -0.5, 0.5));
  std::vector<std::string> in{"x", "w"};
  if (bias) {
    g.initializer("b", random_f32({c.w[0]}));
    in.push_back("b");
  }
  g.node("Conv", in, "out", c.attrs);
  g.output("out");
  return g;
}

Attributes conv_attrs(Ints pads, Ints dilations, Ints strides = {}, int64_t group = 1) {
  Attributes a{{"pads", pads}, {"dilations", dilations}, {"group", group}};
  if (!strides.empty()) a.set("strides", strides);
  return a;
}

TEST(ConvTaps, TapsThatReadOnlyPaddingGo) {
  Attributes same_upper{{"auto_pad", std::string("SAME_UPPER")}, {"dilations", Ints{3, 3}}};
  const std::vector<ConvCase> cases{
      // DeepLabV3's atrous convs over a 4x4 map: only the centre tap reads it.
      {"dilation 12 over 4x4", {1, 16, 4, 4}, {8, 16, 3, 3}, conv_attrs({12, 12, 12, 12}, {12, 12}), "1x1 taps of its 3x3"},
      {"dilation 5 over 5x5", {1, 8, 5, 5}, {6, 8, 3, 3}, conv_attrs({5, 5, 5, 5}, {5, 5}), "1x1 taps of its 3x3"},
      // A 7x7 depthwise kernel over 2x2 (pads 3): the middle 3x3.
      {"7x7 depthwise over 2x2", {1, 12, 2, 2}, {12, 1, 7, 7}, conv_attrs({3, 3, 3, 3}, {1, 1}, {}, 12), "3x3 taps of its 7x7"},
      // Along one axis only; pads unequal; a stride.
      {"one axis", {2, 4, 9, 2}, {5, 4, 5, 5}, conv_attrs({2, 2, 2, 2}, {1, 1}), "5x3 taps of its 5x5"},
      {"unequal pads", {1, 4, 3, 3}, {5, 4, 5, 5}, conv_attrs({4, 1, 0, 3}, {1, 1}), "3x4 taps of its 5x5"},
      {"stride 2", {1, 3, 2, 2}, {4, 3, 5, 5}, conv_attrs({3, 3, 3, 3}, {1, 1}, {2, 2}), "4x4 taps of its 5x5"},
      {"grouped", {1, 8, 2, 3}, {8, 2, 3, 3}, conv_attrs({2, 2, 2, 2}, {2, 2}, {}, 4), "1x3 taps of its 3x3"},
      {"auto_pad SAME_UPPER", {1, 4, 2, 2}, {4, 4, 3, 3}, same_upper, "1x1 taps of its 3x3"},
      {"1-D", {1, 3, 4}, {2, 3, 5}, conv_attrs({6, 6}, {3}), "3 taps of its 5"},
      {"3-D", {1, 2, 2, 3, 3}, {3, 2, 3, 3, 3}, conv_attrs({2, 2, 2, 2, 2, 2}, {2, 2, 2}), "1x3x3 taps of its 3x3x3"},
      // Every tap reads the input somewhere.
      {"3x3 over 8x8", {1, 4, 8, 8}, {4, 4, 3, 3}, conv_attrs({1, 1, 1, 1}, {1, 1}), ""},
      {"dilation 2 over 5x5", {1, 4, 5, 5}, {4, 4, 3, 3}, conv_attrs({2, 2, 2, 2}, {2, 2}), ""},
      // No tap reaches the input (strides step over it: the output is the bias): left to the
      // kernels.
      {"all padding", {1, 2, 1, 1}, {2, 2, 2, 1}, conv_attrs({2, 2, 2, 2}, {1, 1}, {3, 3}), ""},
      // Only the middle tap reads the input, but cutting the taps before it would take the
      // begin pad below 0 (its dilation is more than the pad).
      {"cut pads below 0", {1, 2, 2, 2}, {3, 2, 3, 3}, conv_attrs({1, 1, 3, 3}, {2, 2}, {2, 2}), ""},
  };
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    for (const ConvCase& c : cases)
      for (bool bias : {true, false}) {
        SCOPED_TRACE(str(c.label, bias ? ", bias" : "", " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(conv_graph(c, bias), device, 2e-5);
        ASSERT_EQ(nodes_of_op(plan, "Conv"), 1);
        for (const NodePlan& p : plan) {
          if (p.op != "Conv") continue;
          if (c.taps.empty()) EXPECT_EQ(p.reason.find("taps of its"), std::string::npos) << p.reason;
          else EXPECT_NE(p.reason.find("computes the " + c.taps + " kernel"), std::string::npos) << p.reason;
        }
      }
  }
}

// One initializer read by two Convs over inputs of different sizes: each gets its own slice
// (the one over 2x2 the middle 3x3 of 7x7, the one over 8x8 all of it), and the model's
// weights stay as written.
TEST(ConvTaps, SharedWeightsAreSlicedPerConv) {
  ReferenceGraph g;
  g.input("a", random_f32({1, 4, 2, 2}));
  g.input("b", random_f32({1, 4, 8, 8}));
  g.initializer("w", random_f32({4, 1, 7, 7}, -0.5, 0.5));
  g.node("Conv", {"a", "w"}, "out", conv_attrs({3, 3, 3, 3}, {1, 1}, {}, 4));
  g.node("Conv", {"b", "w"}, "yb", conv_attrs({3, 3, 3, 3}, {1, 1}, {}, 4));
  g.output("out");
  g.output("yb");
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    SCOPED_TRACE(device.str());
    SessionOptions o;
    o.device = device;
    Session s(g.model(), o);
    int trimmed = 0;
    for (const NodePlan& p : s.plan(g.inputs()))
      if (p.op == "Conv" && p.reason.find("computes the 3x3 taps of its 7x7 kernel") != std::string::npos) ++trimmed;
    EXPECT_EQ(trimmed, 1);
    const std::vector<Tensor> y = s.run(g.inputs());
    ASSERT_EQ(y.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      Comparison c = compare(y[i], g.reference(i == 0 ? "out" : "yb"), 2e-5);
      EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
    }
  }
}

}  // namespace
}  // namespace porta::test
