// The rotary-embedding rewrite (runtime/graph_fusion.hpp, fuse_rotary): x * cos +
// rotate_half(x) * sin as LLaMA-style code writes it becomes one RotaryEmbedding on every test
// device, with the tables taken whole or as rows 0.. of a longer one (cos[:n]), through the
// Identity nodes that share equal initializers, in either operand order; the session equals the
// float64 reference of the graph as written. Graphs that differ (tables whose halves differ, the
// halves concatenated the other way, a table of another shape) keep their nodes, with the same
// results. A rotated head split of a wider projection is read where it lies on vulkan.
#include <cmath>
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Form {
  std::string label;
  bool fuses = true;
  bool sliced = true;          // cos[:S] of a [P, D] table; else a table of [S, D]
  bool shared = false;         // the tables through Identity nodes
  bool swapped = false;        // Mul(cos, x), Mul(sin, r), Add(m2, m1)
  bool unequal_halves = false; // tables whose two halves differ
  bool wrong_order = false;    // Concat(x[..., :D/2], Neg(x[..., D/2:]))
};

// A table [rows, d] of angles: equal halves unless `unequal`.
Tensor table(int64_t rows, int64_t d, bool sine, bool unequal) {
  std::vector<double> v;
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t j = 0; j < d; ++j) {
      const double angle = static_cast<double>(p) / (1.0 + static_cast<double>(j % (d / 2))) + (unequal && j >= d / 2 ? 0.3 : 0.0);
      v.push_back(sine ? std::sin(angle) : std::cos(angle));
    }
  return Tensor::from_values(v, {rows, d}, DType::f32);
}

Tensor ints(std::vector<double> v) { return Tensor::from_values(v, {static_cast<int64_t>(v.size())}, DType::i64); }

// x * cos + rotate_half(x) * sin of value `x` [.., S, D], as "out".
void rotate(ReferenceGraph& g, const Form& f, const std::string& x, int64_t s, int64_t d) {
  const int64_t rows = f.sliced ? s + 5 : s;
  g.initializer("cos_t", table(rows, d, false, f.unequal_halves));
  g.initializer("sin_t", table(rows, d, true, f.unequal_halves));
  std::string cos = "cos_t", sin = "sin_t";
  if (f.shared) {
    g.node("Identity", {"cos_t"}, cos = "cos_i");
    g.node("Identity", {"sin_t"}, sin = "sin_i");
  }
  g.initializer("zero", ints({0}));
  g.initializer("half", ints({static_cast<double>(d / 2)}));
  // "To the end": PyTorch writes INT64_MAX (the zoo's llama_decoder has it); ReferenceGraph
  // stores initializers through doubles, so here 2^62.
  g.initializer("end", ints({4.611686018427387904e18}));
  g.initializer("last", ints({-1}));
  g.initializer("first", ints({0}));
  g.initializer("s", ints({static_cast<double>(s)}));
  if (f.sliced) {
    g.node("Slice", {cos, "zero", "s", "first"}, "cos");
    g.node("Slice", {sin, "zero", "s", "first"}, "sin");
    cos = "cos";
    sin = "sin";
  }
  g.node("Slice", {x, "zero", "half", "last"}, "x1");
  g.node("Slice", {x, "half", "end", "last"}, "x2");
  g.node("Neg", {"x2"}, "nx2");
  g.node("Concat", f.wrong_order ? std::vector<std::string>{"x1", "nx2"} : std::vector<std::string>{"nx2", "x1"}, "r",
         {{"axis", int64_t{-1}}});
  g.node("Mul", f.swapped ? std::vector<std::string>{cos, x} : std::vector<std::string>{x, cos}, "m1");
  g.node("Mul", f.swapped ? std::vector<std::string>{sin, "r"} : std::vector<std::string>{"r", sin}, "m2");
  g.node("Add", f.swapped ? std::vector<std::string>{"m2", "m1"} : std::vector<std::string>{"m1", "m2"}, "out");
  g.output("out");
}

ReferenceGraph rotary(const Form& f, const Shape& x) {
  ReferenceGraph g;
  g.input("x", random_f32(x));
  rotate(g, f, "x", x[2], x[3]);
  return g;
}

// A head split as LLaMA-style code writes it, rotated: x [B, S, E] -> MatMul(W [E, lead + 2E])
// -> Slice [lead, lead + E) -> Reshape [B, S, H, D] -> Transpose(0, 2, 1, 3) -> rotary.
ReferenceGraph split_then_rotary(int64_t b, int64_t s, int64_t h, int64_t d, int64_t lead) {
  const int64_t e = h * d;
  ReferenceGraph g;
  g.input("x_in", random_f32({b, s, e}));
  g.initializer("w", random_f32({e, lead + 2 * e}, -0.3, 0.3));
  g.node("MatMul", {"x_in", "w"}, "proj");
  g.initializer("from", ints({static_cast<double>(lead)}));
  g.initializer("to", ints({static_cast<double>(lead + e)}));
  g.initializer("axis2", ints({2}));
  g.node("Slice", {"proj", "from", "to", "axis2"}, "q");
  g.initializer("heads", ints({static_cast<double>(b), static_cast<double>(s), static_cast<double>(h),
                               static_cast<double>(d)}));
  g.node("Reshape", {"q", "heads"}, "q4");
  g.node("Transpose", {"q4"}, "x", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  rotate(g, Form{"split"}, "x", s, d);
  return g;
}

TEST(RotaryFusion, RotateHalfBecomesOneNode) {
  const std::vector<Form> forms{
      {"cos[:S] of a longer table"},
      {"whole tables, operands swapped", true, false, false, true},
      {"tables shared through Identity nodes", true, true, true},
      {"halves that differ", false, true, false, false, true},
      {"halves concatenated the other way", false, true, false, false, false, true},
  };
  const OpSchema* rope = find_op("ai.porta", "RotaryEmbedding");
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool native = resolve(*rope, device, DType::f32).path == Path::native;
    for (const Form& f : forms)
      for (const Shape& x : {Shape{2, 3, 7, 16}, Shape{1, 2, 5, 6}}) {
        SCOPED_TRACE(str(f.label, ", x ", shape_str(x), " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(rotary(f, x), device);
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::RotaryEmbedding"), f.fuses && native ? 1 : 0);
        if (f.fuses && native) EXPECT_EQ(nodes_of_op(plan, "Neg"), 0);
      }
  }
}

// The rotated head split is read where it lies on vulkan (KernelDef::reads_view; the chain
// Slice -> Reshape -> Transpose does not run) when its offset lies on the storage alignment
// (lead 0 and 8, E a multiple of 4; lead 1 where the device's alignment is more than 4 bytes).
// Against the float64 reference everywhere.
TEST(RotaryFusion, HeadSplitReadWhereItLies) {
  const OpSchema* rope = find_op("ai.porta", "RotaryEmbedding");
  struct Case {
    int64_t b, s, h, d, lead;
    bool in_place;
  };
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool native = resolve(*rope, device, DType::f32).path == Path::native;
    for (const Case& c : {Case{2, 7, 3, 8, 0, true}, Case{1, 5, 2, 16, 8, true}, Case{3, 4, 2, 4, 1, false}}) {
      SCOPED_TRACE(str("B ", c.b, " S ", c.s, " H ", c.h, " D ", c.d, " lead ", c.lead, " on ", device.str(),
                       ", seed ", seed()));
      const std::vector<NodePlan> plan = plan_and_check_on(split_then_rotary(c.b, c.s, c.h, c.d, c.lead), device);
      ASSERT_EQ(nodes_of_op(plan, "ai.porta::RotaryEmbedding"), native ? 1 : 0);
      int in_place = 0;
      for (const NodePlan& p : plan) in_place += p.reason.find("its readers read its input where it lies") != std::string::npos;
      const bool views = native && device_type_name(device.type) == "vulkan";
      // Off the alignment of this device's storage bindings (not of every device's: lead 1 is
      // 4 bytes in), the copy stays; either way the numbers above hold.
      if (c.in_place) EXPECT_EQ(in_place, views ? 1 : 0);
      else EXPECT_LE(in_place, views ? 1 : 0);
    }
  }
}

}  // namespace
}  // namespace porta::test
