// The normalization rewrites (runtime/graph_fusion.hpp, fuse_norms): PyTorch's opset 13-16
// export of nn.LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) becomes
// one LayerNormalization, and RMSNorm written out (Pow or a square, ReduceMean, Add, Sqrt, then
// 1 / s times x, or x / s, times w) one RmsNorm, on every test device, in every operand order
// and form; the session equals the float64 reference of the graph as written. Graphs that
// differ in any detail (another axis, another exponent, an intermediate read elsewhere, a scale
// of another length, eps not constant) stay as they are, with the same results.
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
  bool gamma_2d = false;          // gamma [1, D]: LayerNormalization takes no more axes than it normalizes
};

ReferenceGraph layer_norm(const Form& f, const Shape& x) {
  ReferenceGraph g;
  const int64_t d = x.back(), rank = static_cast<int64_t>(x.size());
  g.input("x", random_f32(x, -3, 3));
  const int64_t gamma_len = f.gamma_len ? f.gamma_len : d;
  g.initializer("gamma", random_f32(f.gamma_2d ? Shape{1, gamma_len} : Shape{gamma_len}));
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
      {"gamma of shape 1 x D", false, false, false, false, false, -1, 2.0, 0, false, false, false, true},
  };
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    for (const Form& f : forms)
      for (const Shape& x : {Shape{2, 7, 12}, Shape{3, 33}, Shape{1, 4, 5, 64}}) {
        SCOPED_TRACE(str(f.label, ", x ", shape_str(x), " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(layer_norm(f, x), device, 2e-5);
        EXPECT_EQ(nodes_of_op(plan, "LayerNormalization"), f.fuses ? 1 : 0);
        // Unfused, the tail after the mean may still be an RMSNorm of x - mean (when its
        // variance is a mean of squares): LayerNorm(x) = RmsNorm(x - mean) * gamma + beta.
        if (f.fuses) EXPECT_EQ(nodes_of_op(plan, "ReduceMean"), 0);
        // The Constant eps went with the pattern; Identity nodes that passed on gamma and beta
        // are folded and run nothing.
        if (f.fuses)
          for (const NodePlan& p : plan)
            EXPECT_TRUE(p.op == "LayerNormalization" || (p.op == "Identity" && p.path == Path::folded)) << p.node;
      }
  }
}

struct RmsForm {
  std::string label;
  bool fuses = true;
  std::string inverse = "div";  // "div": Div(1, s) then Mul; "reciprocal"; "x_div": Div(x, s)
  bool square_by_mul = false;   // Mul(x, x) instead of Pow(x, 2)
  bool swap = false;            // Mul(r, x) and Mul(w, n)
  int64_t w_len = 0;            // 0: the last axis' length
  double exponent = 2.0;
};

ReferenceGraph rms_norm(const RmsForm& f, const Shape& x) {
  ReferenceGraph g;
  const int64_t d = x.back();
  g.input("x", random_f32(x, -3, 3));
  g.initializer("w", random_f32({f.w_len ? f.w_len : d}));
  g.initializer("p", Tensor::from_values({f.exponent}, {}, DType::f32));
  g.initializer("eps", Tensor::from_values({1e-6}, {}, DType::f32));
  g.initializer("one", Tensor::from_values({1.0}, {}, DType::f32));
  if (f.square_by_mul) g.node("Mul", {"x", "x"}, "sq");
  else g.node("Pow", {"x", "p"}, "sq");
  g.node("ReduceMean", {"sq"}, "ms", {{"axes", std::vector<int64_t>{-1}}});
  g.node("Add", {"ms", "eps"}, "ve");
  g.node("Sqrt", {"ve"}, "s");
  if (f.inverse == "x_div") {
    g.node("Div", {"x", "s"}, "n");
  } else {
    if (f.inverse == "div") g.node("Div", {"one", "s"}, "r");
    else g.node("Reciprocal", {"s"}, "r");
    g.node("Mul", f.swap ? std::vector<std::string>{"r", "x"} : std::vector<std::string>{"x", "r"}, "n");
  }
  g.node("Mul", f.swap ? std::vector<std::string>{"w", "n"} : std::vector<std::string>{"n", "w"}, "out");
  g.output("out");
  return g;
}

TEST(LayerNormFusion, RmsNormWrittenOutBecomesOneNode) {
  const std::vector<RmsForm> forms{
      {"torch.rsqrt's export"},
      {"Reciprocal, swapped", true, "reciprocal", false, true},
      {"x / s, squared by Mul", true, "x_div", true},
      {"scale of one element", false, "div", false, false, 1},
      {"fourth power", false, "div", false, false, 0, 4.0},
  };
  const OpSchema* rms = find_op("ai.porta", "RmsNorm");
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool native = resolve(*rms, device, DType::f32).path == Path::native;
    for (const RmsForm& f : forms)
      for (const Shape& x : {Shape{2, 7, 12}, Shape{3, 33}}) {
        SCOPED_TRACE(str(f.label, ", x ", shape_str(x), " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(rms_norm(f, x), device, 2e-5);
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::RmsNorm"), f.fuses && native ? 1 : 0);
        EXPECT_EQ(nodes_of_op(plan, "ReduceMean"), f.fuses && native ? 0 : 1);
      }
  }
}

}  // namespace
}  // namespace porta::test
