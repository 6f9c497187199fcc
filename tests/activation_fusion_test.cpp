// Activation fusion (runtime/graph_fusion.hpp) of the activations mobile CNNs put after a Conv:
// Relu, Clip (ReLU6 and other bounds), LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Elu
// and the Swish pattern x * Sigmoid(x). Each pattern fuses into a producer whose kernel declares
// every activation (an op of this test: y = x, then the activation, so its inputs reach each
// bend exactly): its nodes leave the plan, the producer carries the activation's name and
// parameters, and the session's results equal the unfused session's (PORTA_FUSE=0) on inputs
// spanning the bends. The cases that must not fuse stay as they are, and give the same results.
// With a real Conv the same patterns fuse exactly when the cpu Conv kernel declares the
// activation (KernelDef::fused_activations), and match the unfused session either way.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/fused_activation.hpp"
#include "ops/common.hpp"
#include "ops/fused_activation.hpp"
#include "runtime/graph_fusion.hpp"
#include "tests/onnx_graph_builder.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const Shape kShape{1, 4, 9, 9};
const char* kTestDomain = "test.porta";
const char* kProducer = "TestFusionProducer";

// y = x then the activation its attributes name (f32 on cpu, computed in float64), declaring
// every activation the cpu implements: a producer the pass may fuse every pattern into.
void register_producer() {
  static const bool done = [] {
    OpSchema op;
    op.name = kProducer;
    op.domain = kTestDomain;
    op.inputs = {"X"};
    op.outputs = {"Y"};
    op.attrs = {opdef::attr_string("porta_activation", ""), opdef::attr_float("porta_activation_alpha", 0.0),
                opdef::attr_float("porta_activation_beta", 0.0)};
    op.infer = [](InferContext& ctx) {
      opdef::parse_fused_activation(*ctx.attrs, kProducer);
      ctx.set_output(0, ctx.shape(0), ctx.dtype(0));
    };
    op.reference = [](KernelContext& ctx) {
      opdef::FusedActivation f = opdef::parse_fused_activation(*ctx.attrs, kProducer);
      for (int64_t i = 0; i < ctx.in(0).numel(); ++i) ctx.out(0).data<double>()[i] = f(ctx.in(0).data<double>()[i]);
    };
    register_op(op);
    KernelDef k;
    k.op = kProducer;
    k.backend = DeviceType::cpu;
    k.dtypes = kF32;
    k.source = "activation_fusion_test";
    k.fused_activations = cpu::cpu_fused_activations();
    k.fn = [](KernelContext& ctx) {
      opdef::FusedActivation f = opdef::parse_fused_activation(*ctx.attrs, kProducer);
      const float* x = ctx.in(0).data<float>();
      float* y = ctx.out(0).data<float>();
      for (int64_t i = 0; i < ctx.in(0).numel(); ++i) y[i] = static_cast<float>(f(x[i]));
    };
    register_kernel(std::move(k));
    return true;
  }();
  (void)done;
}

// An ONNX model in memory (tests/onnx_graph_builder.hpp): every value has kShape unless
// declared otherwise, and the test domain's producer op is available.
struct FusionGraph : OnnxGraph {
  explicit FusionGraph(int opset = 17) : OnnxGraph(opset, kShape, kTestDomain) {}
};

enum class ProducerKind { test_op, conv };

// x -> producer -> y. The Conv is 1x1 with identity weights and a zero bias, so y = x.
void add_producer(OnnxGraph& g, ProducerKind kind, const std::string& x, const std::string& y) {
  if (kind == ProducerKind::test_op) {
    g.node(kProducer, {x}, y, kTestDomain);
    return;
  }
  const int64_t c = kShape[1];
  std::vector<float> w(static_cast<size_t>(c * c), 0.0f);
  for (int64_t i = 0; i < c; ++i) w[static_cast<size_t>(i * c + i)] = 1.0f;
  std::string wn = y + "_W", bn = y + "_B";
  g.initializer(wn, {c, c, 1, 1}, w);
  g.initializer(bn, {c}, std::vector<float>(static_cast<size_t>(c), 0.0f));
  g.node("Conv", {x, wn, bn}, y);
}

// One fusable pattern: the nodes it adds after y, what the producer should carry once fused,
// and how many nodes leave the graph.
struct Pattern {
  std::string label;
  std::string act;  // porta_activation once fused
  double alpha = 0.0, beta = 0.0;
  int removed = 1;
  std::function<std::string(OnnxGraph&, const std::string& y)> build;  // returns the output
};

std::vector<Pattern> patterns() {
  std::vector<Pattern> p;
  auto unary = [](const std::string& op, std::map<std::string, float> attrs = {}) {
    return [op, attrs](OnnxGraph& g, const std::string& y) {
      onnx::NodeProto* n = g.node(op, {y}, y + "_act");
      for (auto& [k, v] : attrs) OnnxGraph::attr(n, k, v);
      return y + "_act";
    };
  };
  p.push_back({"relu", "Relu", 0, 0, 1, unary("Relu")});
  p.push_back({"sigmoid", "Sigmoid", 0, 0, 1, unary("Sigmoid")});
  p.push_back({"tanh", "Tanh", 0, 0, 1, unary("Tanh")});
  p.push_back({"hard_swish", "HardSwish", 0, 0, 1, unary("HardSwish")});
  // Given attributes are ONNX floats (so the fused values are those floats); absent ones take
  // the schema's defaults.
  p.push_back({"leaky_relu_default", "LeakyRelu", 0.01, 0, 1, unary("LeakyRelu")});
  p.push_back({"leaky_relu_0.2", "LeakyRelu", 0.2f, 0, 1, unary("LeakyRelu", {{"alpha", 0.2f}})});
  p.push_back({"elu_default", "Elu", 1.0, 0, 1, unary("Elu")});
  p.push_back({"elu_0.5", "Elu", 0.5, 0, 1, unary("Elu", {{"alpha", 0.5f}})});
  p.push_back({"hard_sigmoid_default", "HardSigmoid", 0.2, 0.5, 1, unary("HardSigmoid")});
  p.push_back({"hard_sigmoid_torch", "HardSigmoid", 1.0f / 6.0f, 0.5, 1,
               unary("HardSigmoid", {{"alpha", 1.0f / 6.0f}, {"beta", 0.5f}})});
  auto clip = [](std::optional<float> lo, std::optional<float> hi) {
    return [lo, hi](OnnxGraph& g, const std::string& y) {
      std::vector<std::string> in{y};
      if (lo) g.initializer(y + "_min", {}, {*lo});
      in.push_back(lo ? y + "_min" : "");
      if (hi) {
        g.initializer(y + "_max", {}, {*hi});
        in.push_back(y + "_max");
      }
      while (in.size() > 1 && in.back().empty()) in.pop_back();
      g.node("Clip", in, y + "_act");
      return y + "_act";
    };
  };
  p.push_back({"clip_relu6", "Clip", 0, 6, 1, clip(0.0f, 6.0f)});
  p.push_back({"clip_min_only", "Clip", -1.5, kInf, 1, clip(-1.5f, std::nullopt)});
  p.push_back({"clip_max_only", "Clip", -kInf, 0.25, 1, clip(std::nullopt, 0.25f)});
  p.push_back({"clip_no_bounds", "Clip", -kInf, kInf, 1, clip(std::nullopt, std::nullopt)});
  p.push_back({"clip_min_above_max", "Clip", 1, -1, 1, clip(1.0f, -1.0f)});
  // Bounds from Constant nodes (as torch.onnx exports ReLU6): they leave with the Clip.
  p.push_back({"clip_constant_nodes", "Clip", -2.5, 2.5, 3, [](OnnxGraph& g, const std::string& y) {
                 g.constant(y + "_min", -2.5f, true);
                 g.constant(y + "_max", 2.5f, false);
                 g.node("Clip", {y, y + "_min", y + "_max"}, y + "_act");
                 return y + "_act";
               }});
  p.push_back({"swish", "Swish", 0, 0, 2, [](OnnxGraph& g, const std::string& y) {
                 g.node("Sigmoid", {y}, y + "_sig");
                 g.node("Mul", {y, y + "_sig"}, y + "_act");
                 return y + "_act";
               }});
  p.push_back({"swish_mul_swapped", "Swish", 0, 0, 2, [](OnnxGraph& g, const std::string& y) {
                 g.node("Sigmoid", {y}, y + "_sig");
                 g.node("Mul", {y + "_sig", y}, y + "_act");
                 return y + "_act";
               }});
  // hardswish as PyTorch exports it below opset 14: x * HardSigmoid(x; 1/6, 0.5).
  p.push_back({"hard_swish_gated", "HardSwish", 0, 0, 2, [](OnnxGraph& g, const std::string& y) {
                 onnx::NodeProto* n = g.node("HardSigmoid", {y}, y + "_gate");
                 OnnxGraph::attr(n, "alpha", 1.0f / 6.0f);
                 OnnxGraph::attr(n, "beta", 0.5f);
                 g.node("Mul", {y + "_gate", y}, y + "_act");
                 return y + "_act";
               }});
  return p;
}

// x -> producer -> pattern -> out.
Model pattern_model(ProducerKind kind, const Pattern& p) {
  FusionGraph g;
  g.input("x");
  add_producer(g, kind, "x", "y");
  std::string out = p.build(g, "y");
  g.output(out);
  return g.model();
}

// Inputs reaching every bend exactly: 0, +-3 (HardSwish), +-2.5 (HardSigmoid), the Clip
// bounds, their close neighbours, then a spread over [-8, 8] and some large magnitudes.
std::map<std::string, Tensor> bend_inputs() {
  std::vector<double> v;
  for (double b : {0.0, 3.0, -3.0, 2.5, -2.5, 6.0, -1.5, 0.25, 1.0, -1.0})
    for (double d : {0.0, -1e-3, 1e-3, -1e-6, 1e-6}) v.push_back(b + d);
  for (double b : {-100.0, -20.0, 20.0, 100.0}) v.push_back(b);
  std::uniform_real_distribution<double> spread(-8.0, 8.0);
  while (static_cast<int64_t>(v.size()) < shape_numel(kShape)) v.push_back(spread(rng()));
  return {{"x", Tensor::from_values(v, kShape, DType::f32)}};
}

int count_op(const std::vector<NodePlan>& plan, const std::string& op) {
  int n = 0;
  for (auto& p : plan) n += p.op == op;
  return n;
}

// Results of `model` on `inputs`, with fusion on and off; the plans' sizes.
struct Runs {
  std::vector<Tensor> fused, unfused;
  size_t fused_steps = 0, unfused_steps = 0;
  std::vector<NodePlan> fused_plan;
};
Runs run_both(const Model& model, const std::map<std::string, Tensor>& inputs) {
  Runs r;
  Session fused(model);
  r.fused_plan = fused.plan(inputs);
  r.fused_steps = r.fused_plan.size();
  r.fused = fused.run(inputs);
  FuseSetting off("0");
  Session unfused(model);
  r.unfused_steps = unfused.plan(inputs).size();
  r.unfused = unfused.run(inputs);
  return r;
}

void expect_same_results(const Runs& r, const std::string& what) {
  ASSERT_EQ(r.fused.size(), r.unfused.size()) << what;
  for (size_t i = 0; i < r.fused.size(); ++i) {
    Comparison c = compare(r.fused[i], r.unfused[i].cast(DType::f64), 1e-5);
    EXPECT_TRUE(c.ok) << what << ", output " << i << ": " << c.message;
  }
}

// The node of `graph` named like the producer (the first node of op `op`).
const Node* find_node(const Graph& graph, const std::string& op) {
  for (const Node& n : graph.nodes)
    if (n.op->name == op) return &n;
  return nullptr;
}

TEST(ActivationFusion, EveryPatternFusesIntoADeclaringProducer) {
  register_producer();
  auto inputs = bend_inputs();
  for (const Pattern& p : patterns()) {
    SCOPED_TRACE(p.label);
    Model model = pattern_model(ProducerKind::test_op, p);
    auto graph = model.graph_ptr();
    auto fused = detail::fuse_activations(graph, Device::cpu(), true);
    ASSERT_NE(fused, graph);
    EXPECT_EQ(fused->nodes.size() + p.removed, graph->nodes.size());
    const Node* producer = find_node(*fused, kProducer);
    ASSERT_NE(producer, nullptr);
    EXPECT_EQ(producer->attrs.get_string("porta_activation"), p.act);
    EXPECT_EQ(producer->attrs.get_float("porta_activation_alpha"), p.alpha);
    EXPECT_EQ(producer->attrs.get_float("porta_activation_beta"), p.beta);
    EXPECT_EQ(fused->values[producer->outputs[0]].name, graph->values[graph->outputs[0]].name);
    // Sessions that keep every value, and PORTA_FUSE=0, leave the graph alone.
    EXPECT_EQ(detail::fuse_activations(graph, Device::cpu(), false), graph);
    {
      FuseSetting off("0");
      EXPECT_EQ(detail::fuse_activations(graph, Device::cpu(), true), graph);
    }
    Runs r = run_both(model, inputs);
    EXPECT_EQ(r.fused_steps, 1u);
    EXPECT_GT(r.unfused_steps, 1u);
    expect_same_results(r, p.label);
  }
}

// Patterns that must not fuse, each on the test producer: the activation stays a step of the
// plan and the results equal the unfused session's.
struct Unfusable {
  std::string label;
  std::function<void(OnnxGraph&)> build;  // adds everything after the input x
};

std::vector<Unfusable> unfusable() {
  std::vector<Unfusable> u;
  auto producer = [](OnnxGraph& g) { g.node(kProducer, {"x"}, "y", kTestDomain); };
  u.push_back({"clip_bound_not_constant", [=](OnnxGraph& g) {
                 g.input("lo", {});
                 producer(g);
                 g.initializer("hi", {}, {6.0f});
                 g.node("Clip", {"y", "lo", "hi"}, "out");
                 g.output("out");
               }});
  u.push_back({"clip_bound_computed", [=](OnnxGraph& g) {  // a bound some node computes
                 producer(g);
                 g.initializer("hi0", {}, {3.0f});
                 g.node("Relu", {"hi0"}, "hi");
                 g.node("Clip", {"y", "", "hi"}, "out");
                 g.output("out");
               }});
  u.push_back({"sigmoid_read_twice", [=](OnnxGraph& g) {
                 producer(g);
                 g.node("Sigmoid", {"y"}, "s");
                 g.node("Mul", {"y", "s"}, "m");
                 g.node("Add", {"m", "s"}, "out");
                 g.output("out");
               }});
  u.push_back({"sigmoid_is_graph_output", [=](OnnxGraph& g) {
                 producer(g);
                 g.node("Sigmoid", {"y"}, "s");
                 g.node("Mul", {"s", "y"}, "out");
                 g.output("out");
                 g.output("s");
               }});
  u.push_back({"mul_of_sigmoid_and_another", [=](OnnxGraph& g) {  // y read by Sigmoid and by a Mul without s
                 producer(g);
                 g.node("Sigmoid", {"y"}, "s");
                 g.node("Mul", {"y", "x"}, "m");
                 g.node("Add", {"m", "s"}, "out");
                 g.output("out");
               }});
  u.push_back({"producer_read_by_another_node", [=](OnnxGraph& g) {
                 producer(g);
                 g.node("Relu", {"y"}, "r");
                 g.node("Add", {"r", "y"}, "out");
                 g.output("out");
               }});
  u.push_back({"swish_producer_read_by_another_node", [=](OnnxGraph& g) {
                 producer(g);
                 g.node("Sigmoid", {"y"}, "s");
                 g.node("Mul", {"y", "s"}, "m");
                 g.node("Add", {"m", "y"}, "out");
                 g.output("out");
               }});
  u.push_back({"producer_is_graph_output", [=](OnnxGraph& g) {
                 producer(g);
                 g.node("HardSwish", {"y"}, "out");
                 g.output("out");
                 g.output("y");
               }});
  u.push_back({"swish_producer_is_graph_output", [=](OnnxGraph& g) {
                 producer(g);
                 g.node("Sigmoid", {"y"}, "s");
                 g.node("Mul", {"y", "s"}, "out");
                 g.output("out");
                 g.output("y");
               }});
  u.push_back({"not_an_activation", [=](OnnxGraph& g) {
                 producer(g);
                 g.node("Softsign", {"y"}, "out");
                 g.output("out");
               }});
  return u;
}

TEST(ActivationFusion, UnfusablePatternsStay) {
  register_producer();
  auto inputs = bend_inputs();
  inputs["lo"] = Tensor::scalar(-1.0, DType::f32);
  for (const Unfusable& u : unfusable()) {
    SCOPED_TRACE(u.label);
    FusionGraph g;
    g.input("x");
    u.build(g);
    Model model = g.model();
    std::map<std::string, Tensor> in;
    for (const ValueDesc& d : model.inputs()) in[d.name] = inputs.at(d.name);
    auto graph = model.graph_ptr();
    EXPECT_EQ(detail::fuse_activations(graph, Device::cpu(), true), graph);
    Runs r = run_both(model, in);
    EXPECT_EQ(r.fused_steps, r.unfused_steps);
    expect_same_results(r, u.label);
  }
}

// Sigmoid(y) whose output feeds a Mul with something other than y: the Sigmoid alone fuses.
TEST(ActivationFusion, SigmoidFusesAloneWhenTheMulIsNotSwish) {
  register_producer();
  FusionGraph g;
  g.input("x");
  g.node(kProducer, {"x"}, "y", kTestDomain);
  g.node("Sigmoid", {"y"}, "s");
  g.node("Mul", {"s", "x"}, "out");
  g.output("out");
  Model model = g.model();
  auto fused = detail::fuse_activations(model.graph_ptr(), Device::cpu(), true);
  ASSERT_EQ(fused->nodes.size(), 2u);
  EXPECT_EQ(find_node(*fused, kProducer)->attrs.get_string("porta_activation"), "Sigmoid");
  EXPECT_NE(find_node(*fused, "Mul"), nullptr);
  Runs r = run_both(model, bend_inputs());
  EXPECT_EQ(r.fused_steps, 2u);
  expect_same_results(r, "sigmoid then mul");
}

// Two Clips whose bounds come from one pair of Constant nodes: both fuse, and the Constants go
// only once nothing reads them.
TEST(ActivationFusion, SharedClipConstantsLeaveWithTheirLastReader) {
  register_producer();
  auto build = [](bool third_reader) {
    FusionGraph g;
    g.input("x");
    g.constant("lo", 0.0f, true);
    g.constant("hi", 6.0f, true);
    g.node(kProducer, {"x"}, "y1", kTestDomain);
    g.node("Clip", {"y1", "lo", "hi"}, "c1");
    g.node(kProducer, {"c1"}, "y2", kTestDomain);
    g.node("Clip", {"y2", "lo", "hi"}, "c2");
    std::string out = "c2";
    if (third_reader) {
      g.node("Add", {"c2", "hi"}, "sum");
      out = "sum";
    }
    g.output(out);
    return g.model();
  };
  Model both = build(false), kept = build(true);
  auto fused = detail::fuse_activations(both.graph_ptr(), Device::cpu(), true);
  EXPECT_EQ(fused->nodes.size(), 2u);  // the two producers
  fused = detail::fuse_activations(kept.graph_ptr(), Device::cpu(), true);
  EXPECT_EQ(fused->nodes.size(), 4u);  // the producers, the Add and the Constant it reads
  auto inputs = bend_inputs();
  expect_same_results(run_both(both, inputs), "shared constants");
  expect_same_results(run_both(kept, inputs), "shared constants, one still read");
}

// An ONNX opset 10 Clip carries min and max as attributes. porta implements opset 13's Clip and
// refuses such a model when loading it, so fusion never meets attribute bounds.
TEST(ActivationFusion, Opset10ClipIsRefusedAtLoad) {
  FusionGraph g(10);
  g.input("x");
  g.node("Conv", {"x", "W"}, "y");
  g.initializer("W", {4, 4, 1, 1}, std::vector<float>(16, 0.25f));
  onnx::NodeProto* clip = g.node("Clip", {"y"}, "out");
  OnnxGraph::attr(clip, "min", 0.0f);
  OnnxGraph::attr(clip, "max", 6.0f);
  g.output("out");
  std::string m = error_message<Unsupported>([&] { g.model(); });
  EXPECT_NE(m.find("Clip"), std::string::npos) << m;
  EXPECT_NE(m.find("opset 10"), std::string::npos) << m;
}

bool cpu_conv_declares(const std::string& act) {
  for (const KernelDef* k : kernels_for("Conv"))
    if (k->backend == DeviceType::cpu && dtype_in(k->dtypes, DType::f32))
      return std::find(k->fused_activations.begin(), k->fused_activations.end(), act) != k->fused_activations.end();
  return false;
}

// The same patterns after a real Conv on cpu: fused exactly when the cpu Conv kernel declares
// the activation, and equal to the unfused session either way.
TEST(ActivationFusion, ConvPatternsOnCpu) {
  auto inputs = bend_inputs();
  int fused_patterns = 0;
  for (const Pattern& p : patterns()) {
    SCOPED_TRACE(p.label);
    Model model = pattern_model(ProducerKind::conv, p);
    bool declared = cpu_conv_declares(p.act);
    Runs r = run_both(model, inputs);
    EXPECT_EQ(count_op(r.fused_plan, "Conv"), 1);
    if (declared) {
      EXPECT_EQ(r.fused_steps, 1u);
      ++fused_patterns;
      auto fused = detail::fuse_activations(model.graph_ptr(), Device::cpu(), true);
      const Node* conv = find_node(*fused, "Conv");
      ASSERT_NE(conv, nullptr);
      EXPECT_EQ(conv->attrs.get_string("porta_activation"), p.act);
      for (const NodePlan& step : r.fused_plan)
        if (step.op == "Conv")
          EXPECT_NE(step.reason.find(str("applies the ", p.act)), std::string::npos) << step.reason;
    } else {
      EXPECT_EQ(r.fused_steps, r.unfused_steps);
    }
    expect_same_results(r, p.label);
  }
  EXPECT_GE(fused_patterns, 1);  // Relu at least
  RecordProperty("fused_patterns", fused_patterns);
}

// A MobileNet/EfficientNet-like stack: Conv 3x3 + BatchNormalization + ReLU6 (Clip with
// Constant-node bounds, as torch.onnx exports it), pointwise Conv + BatchNormalization +
// HardSwish, depthwise Conv + BatchNormalization + SiLU (x * Sigmoid(x)). The
// BatchNormalizations fold into the Convs, and each activation then fuses into its Conv when the
// cpu Conv kernel declares it; the results equal the unfused session's.
TEST(ActivationFusion, MobileBlockFoldsAndFuses) {
  FusionGraph g;
  g.input("x", {1, 8, 10, 10});
  std::uniform_real_distribution<float> u(-0.5f, 0.5f), pos(0.5f, 2.0f);
  auto random = [&](int64_t n, std::uniform_real_distribution<float>& d) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& e : v) e = d(rng());
    return v;
  };
  auto conv_bn = [&](const std::string& in, const std::string& name, int64_t m, int64_t cg, int64_t k, int64_t group) {
    g.initializer(name + "_W", {m, cg, k, k}, random(m * cg * k * k, u));
    onnx::NodeProto* conv = g.node("Conv", {in, name + "_W"}, name + "_y");
    onnx::AttributeProto* pads = conv->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int i = 0; i < 4; ++i) pads->add_ints(k / 2);
    if (group > 1) {
      onnx::AttributeProto* gr = conv->add_attribute();
      gr->set_name("group");
      gr->set_type(onnx::AttributeProto::INT);
      gr->set_i(group);
    }
    g.initializer(name + "_scale", {m}, random(m, pos));
    g.initializer(name + "_shift", {m}, random(m, u));
    g.initializer(name + "_mean", {m}, random(m, u));
    g.initializer(name + "_var", {m}, random(m, pos));
    g.node("BatchNormalization",
           {name + "_y", name + "_scale", name + "_shift", name + "_mean", name + "_var"}, name + "_bn");
    return name + "_bn";
  };
  std::string a = conv_bn("x", "c1", 16, 8, 3, 1);
  g.constant("zero", 0.0f, true);
  g.constant("six", 6.0f, true);
  g.node("Clip", {a, "zero", "six"}, "relu6");
  std::string b = conv_bn("relu6", "c2", 16, 16, 1, 1);
  g.node("HardSwish", {b}, "hswish");
  std::string c = conv_bn("hswish", "c3", 16, 1, 3, 16);
  g.node("Sigmoid", {c}, "sig");
  g.node("Mul", {c, "sig"}, "out");
  g.output("out", {1, 16, 10, 10});
  Model model = g.model();
  InputSpec spec;
  spec.shape = {1, 8, 10, 10};
  spec.lo = -3;
  spec.hi = 3;
  std::map<std::string, Tensor> inputs{{"x", make_input(spec, DType::f32)}};
  Runs r = run_both(model, inputs);
  EXPECT_EQ(count_op(r.fused_plan, "Conv"), 3);
  EXPECT_EQ(count_op(r.fused_plan, "BatchNormalization"), 0);
  EXPECT_EQ(count_op(r.fused_plan, "Clip"), cpu_conv_declares("Clip") ? 0 : 1);
  EXPECT_EQ(count_op(r.fused_plan, "HardSwish"), cpu_conv_declares("HardSwish") ? 0 : 1);
  EXPECT_EQ(count_op(r.fused_plan, "Mul"), cpu_conv_declares("Swish") ? 0 : 1);
  EXPECT_EQ(count_op(r.fused_plan, "Constant"), cpu_conv_declares("Clip") ? 0 : 2);  // leave with the Clip
  expect_same_results(r, "mobile block");
}

}  // namespace
}  // namespace porta::test
