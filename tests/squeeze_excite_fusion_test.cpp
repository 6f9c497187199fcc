// The squeeze-and-excitation rewrite (runtime/graph_fusion.hpp, fuse_squeeze_excite): a
// GlobalAveragePool (or a ReduceMean over every spatial axis), two 1x1 Convs with their
// activations and the Mul of x by the gate become one SqueezeExcite (ai.porta) on devices that
// run it natively (vulkan:0), in either operand order, with and without biases, in the forms
// torchvision's MobileNetV3 and EfficientNet export; the session equals the float64 reference
// of the graph as written. Graphs that differ in any detail stay as they are, with the same
// results, and so do blocks the vulkan kernel would decline.
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Form {
  std::string label;
  bool fuses = true;
  std::string hidden = "Relu";    // Relu, Swish (Sigmoid and Mul) or LeakyRelu
  std::string gate = "Sigmoid";   // Sigmoid or HardSigmoid
  bool gate_first = false;        // Mul(s, x) rather than Mul(x, s)
  bool biases = true;
  std::string pool = "global";    // global; mean: ReduceMean over the spatial axes; mean_h: over H alone
  bool pooled_output = false;     // the pooled value also a graph output
  bool other_operand = false;     // the gate multiplies another input of x's shape
  int64_t group = 1;              // of the first Conv
};

ReferenceGraph squeeze_excite(const Form& f, const Shape& x, int64_t R) {
  ReferenceGraph g;
  const int64_t C = x[1];
  g.input("x", random_f32(x, -3, 3));
  if (f.other_operand) g.input("z", random_f32(x, -3, 3));
  g.initializer("w1", random_f32({R, C / f.group, 1, 1}, -0.5, 0.5));
  g.initializer("w2", random_f32({C, R, 1, 1}, -0.5, 0.5));
  g.initializer("b1", random_f32({R}));
  g.initializer("b2", random_f32({C}));
  if (f.pool == "global") g.node("GlobalAveragePool", {"x"}, "p");
  else g.node("ReduceMean", {"x"}, "p", {{"axes", f.pool == "mean" ? std::vector<int64_t>{-2, 3} : std::vector<int64_t>{2}}});
  std::vector<std::string> fc1{"p", "w1"}, fc2{"h", "w2"};
  if (f.biases) fc1.push_back("b1"), fc2.push_back("b2");
  g.node("Conv", fc1, "a", {{"group", f.group}});
  if (f.hidden == "Swish") {
    g.node("Sigmoid", {"a"}, "sa");
    g.node("Mul", {"a", "sa"}, "h");
  } else if (f.hidden == "LeakyRelu") {
    g.node("LeakyRelu", {"a"}, "h", {{"alpha", 0.1}});
  } else {
    g.node(f.hidden, {"a"}, "h");
  }
  g.node("Conv", fc2, "e");
  if (f.gate == "HardSigmoid") g.node("HardSigmoid", {"e"}, "s", {{"alpha", 1.0 / 6.0}, {"beta", 0.5}});
  else g.node(f.gate, {"e"}, "s");
  const std::string other = f.other_operand ? "z" : "x";
  g.node("Mul", f.gate_first ? std::vector<std::string>{"s", other} : std::vector<std::string>{other, "s"}, "out");
  g.output("out");
  if (f.pooled_output) g.output("p");
  return g;
}

TEST(SqueezeExciteFusion, ExportedBlocksBecomeOneNode) {
  const std::vector<Form> forms{
      {"MobileNetV3's", true, "Relu", "HardSigmoid", true},
      {"EfficientNet's (SiLU written out)", true, "Swish", "Sigmoid", true},
      {"x first, no biases", true, "Relu", "Sigmoid", false, false},
      {"ReduceMean over the spatial axes", true, "LeakyRelu", "Sigmoid", false, true, "mean"},
      {"ReduceMean over H alone", false, "Relu", "Sigmoid", false, true, "mean_h"},
      {"the pooled value also an output", false, "Relu", "Sigmoid", false, true, "global", true},
      {"the gate multiplies another value", false, "Relu", "Sigmoid", false, true, "global", false, true},
      {"a grouped first Conv", false, "Relu", "Sigmoid", false, true, "global", false, false, 2},
  };
  const OpSchema* se = find_op("ai.porta", "SqueezeExcite");
  ASSERT_NE(se, nullptr);
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool native = resolve(*se, device, DType::f32).path == Path::native;
    for (const Form& f : forms)
      // 16 positions (texels of 4), 9 (one element each), two images; C past one workgroup.
      for (const auto& [x, R] : {std::pair{Shape{1, 32, 4, 4}, int64_t{8}}, {Shape{2, 20, 3, 3}, int64_t{6}},
                                 {Shape{1, 72, 2, 2}, int64_t{20}}}) {
        SCOPED_TRACE(str(f.label, ", x ", shape_str(x), " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(squeeze_excite(f, x, R), device, 2e-5);
        const bool fused = f.fuses && native;
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::SqueezeExcite"), fused ? 1 : 0);
        EXPECT_EQ(nodes_of_op(plan, "Conv"), fused ? 0 : 2);
        if (fused)
          for (const NodePlan& p : plan)
            if (p.op == "ai.porta::SqueezeExcite") EXPECT_EQ(p.path, Path::native) << p.reason;
      }
  }
}

// An image past the vulkan kernel's bound (2^19 elements: one workgroup reads it alone), or
// products past its bound (2^15 multiply-adds), stay as they are (the Convs keep their fused
// activations, which the op's decomposition would write out as nodes of their own), with the
// same results.
TEST(SqueezeExciteFusion, BlocksTheKernelDeclinesStayAsTheyAre) {
  const OpSchema* se = find_op("ai.porta", "SqueezeExcite");
  ASSERT_NE(se, nullptr);
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty() || resolve(*se, device, DType::f32).path != Path::native) continue;
    const Form f{"large", true, "Relu", "HardSigmoid"};
    for (const auto& [x, R] : {std::pair{Shape{1, 16, 180, 183}, int64_t{4}}, {Shape{1, 256, 2, 2}, int64_t{129}}}) {
      SCOPED_TRACE(str(shape_str(x), " on ", device.str(), ", seed ", seed()));
      const std::vector<NodePlan> plan = plan_and_check_on(squeeze_excite(f, x, R), device, 2e-5);
      EXPECT_EQ(nodes_of_op(plan, "ai.porta::SqueezeExcite"), 0);
      EXPECT_EQ(nodes_of_op(plan, "Conv"), 2);
      EXPECT_EQ(nodes_of_op(plan, "HardSigmoid") + nodes_of_op(plan, "Relu"), 0);  // fused into the Convs
    }
  }
}

}  // namespace
}  // namespace porta::test
