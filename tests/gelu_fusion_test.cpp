// The Gelu op (ONNX opset 20) and the rewrite of PyTorch's opset 13-17 export of GELU into it
// (runtime/graph_fusion.hpp, fuse_gelu). Every form PyTorch and hand-written graphs use
// (Div by sqrt 2 or Mul by 1/sqrt 2; x * a * 0.5 in each association; operands in either
// order; constants as initializers or Constant nodes) becomes one Gelu node, and the session
// equals the unfused one (PORTA_FUSE=0) and the float64 reference of gelu. Graphs that differ
// in any detail (a constant off, an intermediate value read elsewhere or a graph output, a
// tanh form) stay as they are.
#include <cmath>
#include <functional>
#include <map>
#include <numbers>
#include <string>
#include <vector>

#include "runtime/graph_fusion.hpp"
#include "tests/onnx_graph_builder.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

const Shape kShape{2, 3, 5, 7};

struct Form {
  std::string name;
  std::function<void(OnnxGraph&)> build;  // x -> ... -> y
  bool fuses = true;
  bool tanh = false;  // the tanh approximation
};

// Scalars: sqrt 2 as float32 stores it, and its reciprocal.
const float kSqrt2 = static_cast<float>(std::numbers::sqrt2);
const float kInvSqrt2 = static_cast<float>(1.0 / std::numbers::sqrt2);

// x / c (or x * c), Erf, + 1, then the product in the association `assoc`:
// 0: (x * a) * 0.5   1: (a * 0.5) * x   2: (x * 0.5) * a.
void gelu_chain(OnnxGraph& g, bool div, int assoc, bool swap, const std::string& y = "y") {
  g.constant("c", div ? kSqrt2 : kInvSqrt2, true);
  g.constant("one", 1.0f, false);
  g.initializer("half", {}, {0.5f});
  g.node(div ? "Div" : "Mul", swap && !div ? std::vector<std::string>{"c", "x"} : std::vector<std::string>{"x", "c"}, "d");
  g.node("Erf", {"d"}, "e");
  g.node("Add", swap ? std::vector<std::string>{"one", "e"} : std::vector<std::string>{"e", "one"}, "a");
  if (assoc == 0) {
    g.node("Mul", swap ? std::vector<std::string>{"a", "x"} : std::vector<std::string>{"x", "a"}, "m");
    g.node("Mul", swap ? std::vector<std::string>{"half", "m"} : std::vector<std::string>{"m", "half"}, y);
  } else if (assoc == 1) {
    g.node("Mul", {"a", "half"}, "m");
    g.node("Mul", swap ? std::vector<std::string>{"m", "x"} : std::vector<std::string>{"x", "m"}, y);
  } else {
    g.node("Mul", swap ? std::vector<std::string>{"half", "x"} : std::vector<std::string>{"x", "half"}, "h");
    g.node("Mul", swap ? std::vector<std::string>{"a", "h"} : std::vector<std::string>{"h", "a"}, y);
  }
}

// The tanh approximation: e = Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)), then the erf form's
// tail. pytorch: nn.GELU(approximate="tanh") as torch.onnx writes it (x * (x * x), constants on
// the left, (x * a) * 0.5); otherwise GPT-2's hand-written form (Pow(x, 3), constants on the
// right, (0.5 * x) * a).
void gelu_tanh_chain(OnnxGraph& g, bool pytorch, float kappa = 0.044715f) {
  g.initializer("beta", {}, {static_cast<float>(std::sqrt(2.0 / std::numbers::pi))});
  g.initializer("kappa", {}, {kappa});
  g.constant("one", 1.0f, true);
  g.initializer("half", {}, {0.5f});
  if (pytorch) {
    g.node("Mul", {"x", "x"}, "sq");
    g.node("Mul", {"x", "sq"}, "cube");
    g.node("Mul", {"kappa", "cube"}, "kc");
  } else {
    g.node("Mul", {"half", "x"}, "h");
    g.initializer("three", {}, {3.0f});
    g.node("Pow", {"x", "three"}, "cube");
    g.node("Mul", {"cube", "kappa"}, "kc");
  }
  g.node("Add", pytorch ? std::vector<std::string>{"x", "kc"} : std::vector<std::string>{"kc", "x"}, "s");
  g.node("Mul", pytorch ? std::vector<std::string>{"beta", "s"} : std::vector<std::string>{"s", "beta"}, "inner");
  g.node("Tanh", {"inner"}, "e");
  g.node("Add", {"one", "e"}, "a");
  if (pytorch) {
    g.node("Mul", {"x", "a"}, "m");
    g.node("Mul", {"half", "m"}, "y");
  } else {
    g.node("Mul", {"h", "a"}, "y");
  }
}

std::vector<Form> forms() {
  std::vector<Form> f;
  f.push_back({"tanh_pytorch", [](OnnxGraph& g) { gelu_tanh_chain(g, true); }, true, true});
  f.push_back({"tanh_gpt2", [](OnnxGraph& g) { gelu_tanh_chain(g, false); }, true, true});
  f.push_back({"tanh_wrong_kappa", [](OnnxGraph& g) { gelu_tanh_chain(g, true, 0.05f); }, false, true});
  for (bool div : {true, false})
    for (int assoc = 0; assoc < 3; ++assoc)
      for (bool swap : {false, true})
        f.push_back({str(div ? "div" : "mul", "_assoc", assoc, swap ? "_swapped" : ""),
                     [=](OnnxGraph& g) { gelu_chain(g, div, assoc, swap); }});
  // Shapes that must not fuse.
  f.push_back({"wrong_divisor", [](OnnxGraph& g) {
                 gelu_chain(g, true, 0, false);
                 g.g->mutable_node(0)->mutable_attribute(0)->mutable_t()->set_float_data(0, 1.5f);
               }, false});
  f.push_back({"wrong_one", [](OnnxGraph& g) {
                 gelu_chain(g, true, 1, false);
                 g.g->mutable_node(1)->mutable_attribute(0)->set_f(2.0f);  // e + 2
               }, false});
  f.push_back({"wrong_half", [](OnnxGraph& g) {
                 gelu_chain(g, true, 0, false);
                 g.g->mutable_initializer(0)->set_float_data(0, 0.25f);
               }, false});
  f.push_back({"erf_read_twice", [](OnnxGraph& g) {  // e also feeds a second output
                 gelu_chain(g, true, 0, false);
                 g.node("Neg", {"e"}, "e2");
                 g.output("e2");
               }, false});
  f.push_back({"intermediate_is_output", [](OnnxGraph& g) {
                 gelu_chain(g, true, 2, false);
                 g.output("a");
               }, false});
  f.push_back({"multiplies_another_value", [](OnnxGraph& g) {  // (x2 * a) * 0.5: not gelu of x
                 g.input("x2");
                 gelu_chain(g, true, 0, false);
                 g.g->mutable_node(g.g->node_size() - 2)->set_input(0, "x2");
               }, false});
  return f;
}

Model build(const Form& form) {
  OnnxGraph g(17, kShape);
  g.input("x");
  form.build(g);
  g.output("y");
  return g.model();
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op->name == op;
  return n;
}

Tensor random_x() {
  InputSpec spec;
  spec.shape = kShape;
  spec.lo = -6;
  spec.hi = 6;
  return make_input(spec, DType::f32);
}

TEST(GeluFusion, EveryFormFusesAndMatches) {
  for (const Form& form : forms()) {
    SCOPED_TRACE(form.name);
    Model model = build(form);
    auto fused = detail::fuse_gelu(model.graph_ptr(), Device::cpu(), true);
    EXPECT_EQ(count_ops(*fused, "Gelu"), form.fuses ? 1 : 0);
    EXPECT_EQ(count_ops(*fused, form.tanh ? "Tanh" : "Erf"), form.fuses ? 0 : 1);
    if (form.fuses) EXPECT_EQ(fused->nodes.size(), 1u);  // the Constant nodes went with the pattern
    std::map<std::string, Tensor> feeds{{"x", random_x()}};
    if (form.name == "multiplies_another_value") feeds["x2"] = random_x();
    Tensor got = Session(model).run(feeds).at(0);
    Tensor unfused;
    {
      FuseSetting off("0");
      unfused = Session(model).run(feeds).at(0);
    }
    Comparison c = compare(got, unfused.cast(DType::f64), 1e-6);
    EXPECT_TRUE(c.ok) << c.message;
    if (form.fuses) {
      Attributes approximate{{"approximate", std::string(form.tanh ? "tanh" : "none")}};
      Comparison r = compare(got, reference_op("Gelu", {feeds["x"]}, approximate).at(0), 1e-6);
      EXPECT_TRUE(r.ok) << r.message;
    }
  }
}

TEST(GeluFusion, OffWhenDisabledOrNotNative) {
  Model model = build(forms()[3]);  // div_assoc0
  auto graph = model.graph_ptr();
  EXPECT_EQ(detail::fuse_gelu(graph, Device::cpu(), false), graph);  // keep_values sessions
  {
    FuseSetting off("0");
    EXPECT_EQ(detail::fuse_gelu(graph, Device::cpu(), true), graph);
  }
  // A device without a native Gelu kernel keeps the five ops (they would decompose back).
  for (Device d : test_devices()) {
    if (d.type == DeviceType::cpu || !device_unusable(d).empty()) continue;
    const OpSchema* gelu = find_op("", "Gelu");
    bool native = resolve(*gelu, d, DType::f32).path == Path::native;
    EXPECT_EQ(count_ops(*detail::fuse_gelu(graph, d, true), "Gelu"), native ? 1 : 0) << d.str();
  }
}

TEST(GeluFusion, NodeTakesTheErfScope) {
  OnnxGraph g(17, kShape);
  g.input("x");
  gelu_chain(g, true, 0, false);
  for (int i = 0; i < g.g->node_size(); ++i)
    if (g.g->node(i).op_type() == "Erf") g.g->mutable_node(i)->set_name("/mlp/act/Erf");
  g.output("y");
  Model model = g.model();
  auto fused = detail::fuse_gelu(model.graph_ptr(), Device::cpu(), true);
  ASSERT_EQ(fused->nodes.size(), 1u);
  EXPECT_EQ(fused->nodes[0].name, "/mlp/act/Gelu");
}

}  // namespace
}  // namespace porta::test
