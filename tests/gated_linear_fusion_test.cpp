// The gated-linear-unit rewrite (runtime/graph_fusion.hpp, fuse_gated_linear): two MatMuls of
// one input and the Mul of their products become one GatedLinear (ai.porta) on devices that run
// it natively (vulkan:0), in the forms LLaMA's SwiGLU (SiLU written out), T5 v1.1's GeGLU and a
// bilinear layer export, with Linear biases, in either operand order; the session equals the
// float64 reference of the graph as written. Graphs that differ in any detail stay as they
// are, with the same results, and so do products of at most 8 rows (the kernel declines them).
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Form {
  std::string label;
  bool fuses = true;
  std::string gate = "Swish";  // Swish (Sigmoid and Mul), Gelu, Relu or "" (bilinear)
  bool up_first = false;       // Mul(up, gate)
  bool biases = false;         // Linear layers' biases: Add after each MatMul
  bool other_x = false;        // the up projection reads another input
  bool gate_output = false;    // the gate's product also a graph output
  bool narrow_up = false;      // Wu K x 1: the Mul broadcasts it
  bool both_activated = false; // a Relu on the up projection too
};

ReferenceGraph gated_linear(const Form& f, const Shape& x, int64_t F) {
  ReferenceGraph g;
  const int64_t K = x.back();
  g.input("x", random_f32(x, -2, 2));
  if (f.other_x) g.input("x2", random_f32(x, -2, 2));
  g.initializer("wg", random_f32({K, F}, -0.3, 0.3));
  g.initializer("wu", random_f32({K, f.narrow_up ? 1 : F}, -0.3, 0.3));
  g.initializer("bg", random_f32({F}));
  g.initializer("bu", random_f32({f.narrow_up ? 1 : F}));
  g.node("MatMul", {"x", "wg"}, f.biases ? "pg" : "a");
  if (f.biases) g.node("Add", {"pg", "bg"}, "a");
  std::string gate = "gate";
  if (f.gate == "Swish") {
    g.node("Sigmoid", {"a"}, "sa");
    g.node("Mul", {"a", "sa"}, "gate");
  } else if (f.gate.empty()) {
    gate = "a";
  } else {
    g.node(f.gate, {"a"}, "gate");
  }
  g.node("MatMul", {f.other_x ? "x2" : "x", "wu"}, f.biases ? "pu" : (f.both_activated ? "b" : "up"));
  if (f.biases) g.node("Add", {"pu", "bu"}, f.both_activated ? "b" : "up");
  if (f.both_activated) g.node("Relu", {"b"}, "up");
  g.node("Mul", f.up_first ? std::vector<std::string>{"up", gate} : std::vector<std::string>{gate, "up"}, "out");
  g.output("out");
  if (f.gate_output) g.output("a");
  return g;
}

TEST(GatedLinearFusion, ExportedLayersBecomeOneNode) {
  const std::vector<Form> forms{
      {"LLaMA's SwiGLU"},
      {"up first, Linear biases", true, "Swish", true, true},
      {"GeGLU", true, "Gelu"},
      {"bilinear", true, ""},
      {"the up projection of another input", false, "Swish", false, false, true},
      {"the gate's product also an output", false, "Swish", false, false, false, true},
      {"an up projection the Mul broadcasts", false, "Swish", false, false, false, false, true},
      {"both products activated", false, "Relu", false, false, false, false, false, true},
  };
  const OpSchema* op = find_op("ai.porta", "GatedLinear");
  ASSERT_NE(op, nullptr);
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool native = resolve(*op, device, DType::f32).path == Path::native;
    for (const Form& f : forms)
      // 32 rows (the texel kernel, vec4 stores), 72 rows of 10 outputs (element stores), 4 rows
      // (the "rows" MatMul's ground: not fused).
      for (const auto& [x, F] : {std::pair{Shape{2, 16, 64}, int64_t{44}}, {Shape{3, 24, 16}, int64_t{10}},
                                 {Shape{4, 32}, int64_t{16}}}) {
        SCOPED_TRACE(str(f.label, ", x ", shape_str(x), " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(gated_linear(f, x, F), device, 2e-5);
        // vulkan's kernel declines products of at most 8 rows: those keep their MatMuls.
        const bool fused = f.fuses && native && shape_numel(x) / x.back() > 8;
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::GatedLinear"), fused ? 1 : 0);
        EXPECT_EQ(nodes_of_op(plan, "MatMul"), fused ? 0 : 2);
        if (fused)
          for (const NodePlan& p : plan)
            if (p.op == "ai.porta::GatedLinear") EXPECT_EQ(p.path, Path::native) << p.reason;
      }
  }
}

}  // namespace
}  // namespace porta::test
