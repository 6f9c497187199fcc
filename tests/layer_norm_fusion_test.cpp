// The LayerNormalization rewrite (runtime/graph_fusion.hpp, fuse_layer_norm): PyTorch's opset
// 13-16 export of nn.LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)
// becomes one LayerNormalization on every test device, in every operand order and axes form; the
// session equals the float64 reference of the graph as written (and PORTA_FUSE=0). Graphs that
// differ in any detail (another axis, another exponent, an intermediate read elsewhere, gamma of
// another length, eps not constant) stay as they are, with the same results.
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Form {
  std::string label;
  bool fuses = true;
  bool swap_eps = false, swap_gamma = false, swap_beta = false;
  bool axes_positive = false;     // axes = [rank - 1] instead of [-1]
  int64_t axis = -1;              // of the second ReduceMean
  double exponent = 2.0;
  int64_t gamma_len = 0;          // 0: the last axis' length
  bool mean_is_output = false;    // the first ReduceMean's output also a graph output
  bool eps_input = false;         // eps a graph input, not a constant
  bool shared = false;            // gamma and beta through Identity nodes (PyTorch's shared initializers)
};

ReferenceGraph layer_norm(const Form& f, const Shape& x) {
  ReferenceGraph g;
  const int64_t d = x.back(), rank = static_cast<int64_t>(x.size());
  g.input("x", random_f32(x, -3, 3));
  g.initializer("gamma", random_f32({f.gamma_len ? f.gamma_len : d}));
  g.initializer("beta", random_f32({d}));
  g.initializer("p", Tensor::from_values({f.exponent}, {}, DType::f32));
  if (f.eps_input) g.input("eps", Tensor::from_values({1e-5}, {}, DType::f32));
  else g.constant("eps", Tensor::from_values({1e-5}, {}, DType::f32));
  const std::vector<int64_t> last{f.axes_positive ? rank - 1 : -1};
  g.node("ReduceMean", {"x"}, "mean", {{"axes", last}});
  g.node("Sub", {"x", "mean"}, "xc");
  g.node("Pow", {"xc", "p"}, "sq");
  g.node("ReduceMean", {"sq"}, "var", {{"axes", f.axis == -1 ? last : std::vector<int64_t>{f.axis}}});
  g.node("Add", f.swap_eps ? std::vector<std::string>{"eps", "var"} : std::vector<std::string>{"var", "eps"}, "ve");
  g.node("Sqrt", {"ve"}, "sd");
  g.node("Div", {"xc", "sd"}, "n");
  std::string gamma = "gamma", beta = "beta";
  if (f.shared) {
    g.node("Identity", {"gamma"}, "gamma_1");
    g.node("Identity", {"gamma_1"}, gamma = "gamma_2");
    g.node("Identity", {"beta"}, beta = "beta_1");
  }
  g.node("Mul", f.swap_gamma ? std::vector<std::string>{gamma, "n"} : std::vector<std::string>{"n", gamma}, "ng");
  g.node("Add", f.swap_beta ? std::vector<std::string>{beta, "ng"} : std::vector<std::string>{"ng", beta}, "out");
  g.output("out");
  if (f.mean_is_output) g.output("mean");
  return g;
}

TEST(LayerNormFusion, PyTorchsExportBecomesOneNode) {
  const std::vector<Form> forms{
      {"as exported"},
      {"operands swapped", true, true, true, true},
      {"positive axes", true, false, false, false, true},
      {"gamma and beta shared through Identity nodes", true, false, false, false, false, -1, 2.0, 0, false, false, true},
      {"variance over another axis", false, false, false, false, false, 0},
      {"fourth power", false, false, false, false, false, -1, 4.0},
      {"gamma of one element", false, false, false, false, false, -1, 2.0, 1},
      {"mean also an output", false, false, false, false, false, -1, 2.0, 0, true},
      {"eps an input", false, false, false, false, false, -1, 2.0, 0, false, true},
  };
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    for (const Form& f : forms)
      for (const Shape& x : {Shape{2, 7, 12}, Shape{3, 33}, Shape{1, 4, 5, 64}}) {
        SCOPED_TRACE(str(f.label, ", x ", shape_str(x), " on ", device.str(), ", seed ", seed()));
        ReferenceGraph g = layer_norm(f, x);
        SessionOptions o;
        o.device = device;
        Session s(g.model(), o);
        const std::vector<NodePlan> plan = s.plan(g.inputs());
        EXPECT_EQ(nodes_of_op(plan, "LayerNormalization"), f.fuses ? 1 : 0);
        EXPECT_EQ(nodes_of_op(plan, "ReduceMean"), f.fuses ? 0 : 2);
        // The Constant eps went with the pattern; Identity nodes that passed on gamma and beta
        // are folded and run nothing.
        if (f.fuses)
          for (const NodePlan& p : plan)
            EXPECT_TRUE(p.op == "LayerNormalization" || (p.op == "Identity" && p.path == Path::folded)) << p.node;
        Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 2e-5);
        EXPECT_TRUE(c.ok) << c.message;
      }
  }
}

}  // namespace
}  // namespace porta::test
