// Pad folding (runtime/graph_fusion.hpp, fold_pads): a constant Pad of +0.0 around the spatial
// axes disappears into the Conv or AveragePool reading it, whose pads grow by the Pad's, only
// where the result cannot change: each folding case checks the rewritten node and that the
// session's results equal the float64 reference of the graph as written (Pad, then the op);
// each case that must not fold (pads on N or C, negative pads, a non-zero or -0.0 value,
// another mode, a second reader, a graph output, count_include_pad = 0 next to the pool's own
// pads, ceil_mode, auto_pad, MaxPool) keeps its Pad and gives the reference's results too. The
// inputs make a wrong fold visible: positive for the average (a changed divisor shows), negative
// for MaxPool (padded zeros would win).
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph_fusion.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

// Deterministic values in [lo, lo + 1).
Tensor pattern(const Shape& shape, double lo) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = lo + static_cast<double>((i * 37) % 101) / 101.0;
  return Tensor::from_values(v, shape, DType::f32);
}

Tensor ints(const Ints& v) {
  std::vector<double> d(v.begin(), v.end());
  return Tensor::from_values(d, {static_cast<int64_t>(v.size())}, DType::i64);
}

// How a Pad gets its pads and value.
struct PadSpec {
  Ints pads;
  std::optional<float> value;  // none: no constant_value input
  std::string mode = "constant";
  bool pads_from_constant_node = false;
};

// x -> Pad -> "padded"; returns the name of the Pad's output.
std::string add_pad(ReferenceGraph& g, const std::string& x, const PadSpec& p) {
  const std::string pads = x + "_pads", value = x + "_value";
  if (p.pads_from_constant_node) g.constant(pads, ints(p.pads));
  else g.initializer(pads, ints(p.pads));
  std::vector<std::string> in{x, pads};
  if (p.value) {
    g.initializer(value, Tensor::from_values({*p.value}, {}, DType::f32));
    in.push_back(value);
  }
  Attributes a;
  if (p.mode != "constant") a.set("mode", p.mode);
  g.node("Pad", in, "padded", a);
  return "padded";
}

void add_conv(ReferenceGraph& g, const std::string& x, const std::string& y, int64_t cin, int64_t cout, Attributes a,
              int64_t group = 1) {
  g.initializer(y + "_W", pattern({cout, cin / group, 3, 3}, -0.5));
  g.initializer(y + "_B", pattern({cout}, -0.5));
  if (group != 1) a.set("group", group);
  g.node("Conv", {x, y + "_W", y + "_B"}, y, a);
}

// The first node of op `op` in `graph`.
const Node* first_node(const Graph& graph, const std::string& op) {
  for (const Node& n : graph.nodes)
    if (n.op->name == op) return &n;
  return nullptr;
}

// Runs `g` (output "y") against its reference; expects the Pad to be folded or kept.
ReferenceRun expect_pad(const ReferenceGraph& g, bool folded, const std::string& label) {
  SCOPED_TRACE(label);
  ReferenceRun r = run_against_reference(g, {"y"});
  EXPECT_EQ(nodes_of_op(r.plan, "Pad"), folded ? 0 : 1);
  return r;
}

TEST(PadFusion, PadIntoConv) {
  const Shape xs{1, 3, 7, 8};
  // Asymmetric Pad and Conv pads, strides; a depthwise Conv with dilations; pads from a
  // Constant node.
  for (bool depthwise : {false, true}) {
    ReferenceGraph g;
    g.input("x", pattern(xs, -0.5));
    std::string p = add_pad(g, "x", {{0, 0, 1, 2, 0, 0, 2, 1}, std::nullopt, "constant", depthwise});
    Attributes a{{"pads", Ints{1, 0, 0, 1}}, {"strides", Ints{2, 1}}};
    if (depthwise) a.set("dilations", Ints{2, 1});
    add_conv(g, p, "y", 3, depthwise ? 3 : 5, a, depthwise ? 3 : 1);
    g.output("y");
    expect_pad(g, true, depthwise ? "depthwise" : "dense");

    auto graph = g.model().graph_ptr();
    auto folded = detail::fold_pads(graph, true);
    ASSERT_NE(folded, graph);
    EXPECT_EQ(first_node(*folded, "Pad"), nullptr);
    EXPECT_EQ(first_node(*folded, "Constant"), nullptr);  // it only fed the Pad
    const Node* conv = first_node(*folded, "Conv");
    ASSERT_NE(conv, nullptr);
    EXPECT_EQ(conv->attrs.get_ints("pads"), (Ints{2, 2, 2, 2}));
    EXPECT_EQ(folded->values[conv->inputs[0]].name, "x");
    // Sessions that keep every value, and PORTA_FUSE=0, leave the graph alone.
    EXPECT_EQ(detail::fold_pads(graph, false), graph);
    FuseSetting off("0");
    EXPECT_EQ(detail::fold_pads(graph, true), graph);
  }
}

// An explicit constant_value of +0.0 folds like an absent one; a Conv without pads gets the
// Pad's; 1-D and 3-D convs too.
TEST(PadFusion, ZeroValueAndOtherRanks) {
  for (const Shape& xs : {Shape{1, 2, 9}, Shape{1, 2, 5, 6}, Shape{1, 2, 4, 5, 3}}) {
    const size_t rank = xs.size();
    Ints pads(2 * rank, 0);
    for (size_t i = 2; i < rank; ++i) pads[i] = 1, pads[rank + i] = static_cast<int64_t>(i % 2);
    ReferenceGraph g;
    g.input("x", pattern(xs, -0.5));
    std::string p = add_pad(g, "x", {pads, 0.0f});
    Shape ws{3, 2};
    for (size_t i = 2; i < rank; ++i) ws.push_back(2);
    g.initializer("W", pattern(ws, -0.5));
    g.node("Conv", {p, "W"}, "y");
    g.output("y");
    expect_pad(g, true, shape_str(xs));
  }
}

// Pad + AveragePool: count_include_pad = 1 adds the pads whatever the pool's own; 0 folds only
// where the pool has no pads of its own (then every window lies inside the padded data), as
// count_include_pad = 1. Inception v3's avg_pool2d(3, 1, padding=1) is the second case.
TEST(PadFusion, PadIntoAveragePool) {
  const Shape xs{1, 3, 7, 7};
  struct Case {
    std::string label;
    int64_t include_pad;
    Ints pool_pads;
    bool folds;
  };
  for (const Case& c : {Case{"include_pad, own pads", 1, {1, 0, 1, 1}, true},
                        Case{"include_pad, no own pads", 1, {0, 0, 0, 0}, true},
                        Case{"exclude_pad, no own pads (inception)", 0, {0, 0, 0, 0}, true},
                        Case{"exclude_pad, own pads", 0, {1, 1, 0, 0}, false}}) {
    ReferenceGraph g;
    g.input("x", pattern(xs, 1.0));
    std::string p = add_pad(g, "x", {{0, 0, 1, 1, 0, 0, 1, 1}, std::nullopt});
    g.node("AveragePool", {p}, "y",
           {{"kernel_shape", Ints{3, 3}}, {"pads", c.pool_pads}, {"count_include_pad", c.include_pad}});
    g.output("y");
    expect_pad(g, c.folds, c.label);
    auto graph = g.model().graph_ptr();
    auto folded = detail::fold_pads(graph, true);
    EXPECT_EQ(folded != graph, c.folds) << c.label;
    if (c.folds) {
      const Node* pool = first_node(*folded, "AveragePool");
      ASSERT_NE(pool, nullptr);
      EXPECT_EQ(pool->attrs.get_int("count_include_pad"), 1);
      Ints want = c.pool_pads;
      for (int64_t& v : want) ++v;
      EXPECT_EQ(pool->attrs.get_ints("pads"), want) << c.label;
    }
  }
}

// Cases that must keep their Pad; the session still computes the reference's results.
TEST(PadFusion, PadsThatStay) {
  const Shape xs{1, 3, 6, 7};
  const Ints spatial{0, 0, 1, 1, 0, 0, 1, 1};
  Attributes avg{{"kernel_shape", Ints{3, 3}}, {"count_include_pad", int64_t{1}}};
  struct Case {
    std::string label;
    PadSpec pad;
    std::string op = "Conv";
    Attributes attrs = {};
    double lo = -0.5;  // inputs in [lo, lo + 1)
  };
  std::vector<Case> cases{
      {"pads on N", {{1, 0, 1, 1, 0, 0, 1, 1}}},
      {"pads on C", {{0, 1, 1, 1, 0, 0, 1, 1}}},
      {"C padded at the end", {{0, 0, 1, 1, 0, 2, 1, 1}}},
      {"negative pads (crop)", {{0, 0, -1, 1, 0, 0, 1, 1}}},
      {"value 0.5", {spatial, 0.5f}},
      {"value -0.0", {spatial, -0.0f}},
      {"reflect", {spatial, std::nullopt, "reflect"}},
      {"edge", {spatial, std::nullopt, "edge"}},
      {"conv auto_pad SAME_UPPER", {spatial}, "Conv", {{"auto_pad", std::string("SAME_UPPER")}}},
      {"average ceil_mode", {spatial}, "AveragePool",
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}, 1.0},
      {"average auto_pad VALID", {spatial}, "AveragePool",
       {{"kernel_shape", Ints{3, 3}}, {"auto_pad", std::string("VALID")}}, 1.0},
      {"max pool over negative data", {spatial}, "MaxPool", {{"kernel_shape", Ints{3, 3}}}, -2.0},
      {"max pool with pads", {spatial}, "MaxPool", {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}, -2.0},
  };
  for (const Case& c : cases) {
    ReferenceGraph g;
    g.input("x", pattern(xs, c.lo));
    std::string p = add_pad(g, "x", c.pad);
    if (c.op == "Conv") {
      const int64_t cin = c.pad.pads[1] + 3 + c.pad.pads[5];
      g.initializer("W", pattern({4, cin, 3, 3}, -0.5));
      g.node("Conv", {p, "W"}, "y", c.attrs);
    } else {
      g.node(c.op, {p}, "y", c.attrs);
    }
    g.output("y");
    expect_pad(g, false, c.label);
    auto graph = g.model().graph_ptr();
    EXPECT_EQ(detail::fold_pads(graph, true), graph) << c.label;
  }
}

// A Pad read twice (by two Convs, or a Conv and a Relu) or that is a graph output stays.
TEST(PadFusion, SharedOrOutputPadsStay) {
  const Shape xs{1, 3, 6, 6};
  {
    ReferenceGraph g;
    g.input("x", pattern(xs, -0.5));
    std::string p = add_pad(g, "x", {{0, 0, 1, 1, 0, 0, 1, 1}});
    add_conv(g, p, "c1", 3, 4, {});
    g.node("Relu", {p}, "r");
    g.node("ReduceSum", {"r"}, "s", {{"keepdims", int64_t{1}}});
    g.node("Add", {"c1", "s"}, "y");
    g.output("y");
    expect_pad(g, false, "two readers");
  }
  {
    ReferenceGraph g;
    g.input("x", pattern(xs, -0.5));
    std::string p = add_pad(g, "x", {{0, 0, 1, 1, 0, 0, 1, 1}});
    add_conv(g, p, "y", 3, 4, {});
    g.output("y");
    g.output(p);
    ReferenceRun r = run_against_reference(g, {"y", p});
    EXPECT_EQ(nodes_of_op(r.plan, "Pad"), 1) << "graph output";
  }
}

// A Pad of all-zero pads (DenseNet's transitions export one before each AveragePool) is the
// identity: it disappears whatever reads it, in any mode, and whatever its value.
TEST(PadFusion, IdentityPadsDisappear) {
  const Shape xs{1, 3, 6, 6};
  for (const std::string mode : {"constant", "reflect"}) {
    ReferenceGraph g;
    g.input("x", pattern(xs, -2.0));
    std::string p = add_pad(g, "x", {Ints(8, 0), mode == "constant" ? std::optional<float>(3.0f) : std::nullopt, mode});
    g.node("MaxPool", {p}, "m", {{"kernel_shape", Ints{2, 2}}});
    g.node("AveragePool", {p}, "a", {{"kernel_shape", Ints{2, 2}}});
    g.node("Add", {"m", "a"}, "y");
    g.output("y");
    expect_pad(g, true, mode);
  }
}

}  // namespace
}  // namespace porta::test
