// Elementwise chains (runtime/graph_fusion.hpp, fuse_elementwise_chains; ops/elementwise_chain.hpp):
// on vulkan:0 groups of elementwise nodes whose intermediate values nothing else reads become one
// ElementwiseChain, run by one dispatch of elementwise_chain.comp. Every graph runs in sessions
// against the float64 reference of the graph as written, with fresh random values, twice (the
// second run reuses what the first prepared), and checks which nodes became chains and how they
// run. Graphs whose values are read elsewhere keep those values; a broadcast the texel kernel
// does not read still fuses and runs the chain's decomposition; cpu sessions keep the nodes.
// The op's own checks of a program (a model file may carry one) are tested at the end.
#include <cmath>
#include <string>
#include <vector>

#include "ops/elementwise_chain.hpp"
#include "porta/backend.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

const char* const kChain = "ai.porta::ElementwiseChain";

Device vulkan0() { return Device::parse("vulkan:0"); }

#define SKIP_WITHOUT_VULKAN() \
  if (!device_unusable(vulkan0()).empty()) GTEST_SKIP() << "no vulkan:0: " << device_unusable(vulkan0())

// The plan of the plan's (first) chain node.
const NodePlan* chain_of(const std::vector<NodePlan>& plan) {
  for (const NodePlan& p : plan)
    if (p.op == kChain) return &p;
  return nullptr;
}

// Expects one chain, run by the vulkan kernel itself.
void expect_native_chain(const std::vector<NodePlan>& plan) {
  EXPECT_EQ(nodes_of_op(plan, kChain), 1);
  const NodePlan* p = chain_of(plan);
  ASSERT_NE(p, nullptr) << "no chain";
  EXPECT_EQ(p->path, Path::native) << p->reason;
  EXPECT_NE(p->reason.find("vulkan kernel 'texel'"), std::string::npos) << p->reason;
}

Tensor scalar(double v) { return Tensor::from_values({v}, {}, DType::f32); }

// The op's attributes for a program whose steps carry no attribute values.
Attributes chain_program(std::vector<std::string> ops, std::vector<int64_t> operands,
                         std::vector<double> constants = {}) {
  Attributes a;
  const size_t n = ops.size();
  a.set("ops", std::move(ops));
  a.set("operands", std::move(operands));
  a.set("alphas", std::vector<double>(n, 0.0));
  a.set("betas", std::vector<double>(n, 0.0));
  a.set("constants", std::move(constants));
  return a;
}

TEST(ElementwiseFusion, ChainsBecomeOneNodeOnVulkan) {
  SKIP_WITHOUT_VULKAN();
  SCOPED_TRACE(str("seed ", seed()));
  {  // Mish: x * tanh(softplus(x)), x read twice; odd size (the last texel partly stored).
    ReferenceGraph g;
    g.input("x", random_f32({3, 17}, -5, 5));
    g.node("Softplus", {"x"}, "sp");
    g.node("Tanh", {"sp"}, "t");
    g.node("Mul", {"x", "t"}, "out");
    g.output("out");
    std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
    EXPECT_EQ(plan.size(), 1u);
    expect_native_chain(plan);
  }
  {  // LayerNormalization written out with a gamma that is no constant (so no LayerNormalization
     // rewrite): the tail after the variance is one chain of 4 inputs (x - mean, read by Pow
     // and Div, stays between two groups).
    ReferenceGraph g;
    g.input("x", random_f32({2, 5, 12}));
    g.input("gamma", random_f32({12}));
    g.initializer("beta", random_f32({12}));
    g.initializer("two", scalar(2.0));
    g.constant("eps", scalar(1e-5));
    g.node("ReduceMean", {"x"}, "mean", {{"axes", std::vector<int64_t>{-1}}});
    g.node("Sub", {"x", "mean"}, "xc");
    g.node("Pow", {"xc", "two"}, "sq");
    g.node("ReduceMean", {"sq"}, "var", {{"axes", std::vector<int64_t>{-1}}});
    g.node("Add", {"var", "eps"}, "ve");
    g.node("Sqrt", {"ve"}, "sd");
    g.node("Div", {"xc", "sd"}, "n");
    g.node("Mul", {"n", "gamma"}, "ng");
    g.node("Add", {"ng", "beta"}, "out");
    g.output("out");
    std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
    EXPECT_EQ(nodes_of_op(plan, kChain), 1);
    for (const char* gone : {"Sqrt", "Div", "Mul"}) EXPECT_EQ(nodes_of_op(plan, gone), 0) << gone;
    EXPECT_EQ(nodes_of_op(plan, "Sub"), 1);
    EXPECT_EQ(nodes_of_op(plan, "Pow"), 1);
    expect_native_chain(plan);
  }
  {  // A per-channel scale, a residual, Relu: three inputs, one of them an element per 20.
    ReferenceGraph g;
    g.input("x", random_f32({2, 8, 5, 4}));
    g.input("y", random_f32({2, 8, 5, 4}));
    g.initializer("s", random_f32({1, 8, 1, 1}));
    g.node("Mul", {"x", "s"}, "xs");
    g.node("Add", {"xs", "y"}, "sum");
    g.node("Relu", {"sum"}, "out");
    g.output("out");
    expect_native_chain(plan_and_check_on(g, vulkan0()));
  }
  {  // Scalar constants on either side (immediates), Clip's constant bounds, Pow by 3,
     // attributes; a row of 8 repeating over the leading axes.
    ReferenceGraph g;
    g.input("x", random_f32({4, 6, 8}, -2, 2));
    g.initializer("row", random_f32({8}));
    g.constant("one", scalar(1.0));
    g.initializer("half", scalar(0.5));
    g.initializer("three", scalar(3.0));
    g.initializer("lo", scalar(-0.4));
    g.initializer("hi", scalar(0.9));
    g.node("Add", {"x", "one"}, "a");
    g.node("Mul", {"half", "a"}, "b");
    g.node("Sub", {"b", "row"}, "c");
    g.node("Pow", {"c", "three"}, "d");
    g.node("LeakyRelu", {"d"}, "e", {{"alpha", 0.2}});
    g.node("Clip", {"e", "lo", "hi"}, "f");
    g.node("HardSigmoid", {"f"}, "out", {{"alpha", 0.3}, {"beta", 0.4}});
    g.output("out");
    std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
    EXPECT_EQ(plan.size(), 1u);
    expect_native_chain(plan);
  }
  {  // Thirteen steps: the last twelve are one chain, the first stays a node of its own.
    ReferenceGraph g;
    g.input("x", random_f32({5, 9}, 0.2, 0.9));
    std::string v = "x";
    const std::vector<std::string> ops{"Abs", "Sigmoid", "Sqrt", "Neg", "Exp", "Softsign", "Sin",
                                       "Cos", "Tanh", "Erf", "Softplus", "HardSwish", "Relu"};
    for (size_t k = 0; k < ops.size(); ++k) {
      const std::string y = k + 1 == ops.size() ? "out" : str("v", k);
      g.node(ops[k], {v}, y);
      v = y;
    }
    g.output("out");
    std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
    EXPECT_EQ(plan.size(), 2u);
    EXPECT_EQ(nodes_of_op(plan, "Abs"), 1);
    expect_native_chain(plan);
  }
}

// Where a value leaves the group (a graph output, or read by a node that is no step) or steps
// of two groups read it, it stays a value; the results stay the reference's.
TEST(ElementwiseFusion, ValuesReadElsewhereStay) {
  SKIP_WITHOUT_VULKAN();
  SCOPED_TRACE(str("seed ", seed()));
  {  // An intermediate graph output: Exp -> Neg is a chain writing it, Abs after it another node.
    ReferenceGraph g;
    g.input("x", random_f32({6, 10}));
    g.node("Exp", {"x"}, "e");
    g.node("Neg", {"e"}, "mid");
    g.node("Abs", {"mid"}, "out");
    g.output("out");
    g.output("mid");
    SessionOptions o;
    o.device = vulkan0();
    Session s(g.model(), o);
    std::vector<NodePlan> plan = s.plan(g.inputs());
    EXPECT_EQ(nodes_of_op(plan, kChain), 1);
    EXPECT_EQ(nodes_of_op(plan, "Abs"), 1);
    std::vector<Tensor> got = s.run(g.inputs());
    for (size_t k = 0; k < 2; ++k) {
      Comparison c = compare(got.at(k), g.reference(k == 0 ? "out" : "mid"), 1e-5);
      EXPECT_TRUE(c.ok) << c.message;
    }
  }
  {  // t read by a step and by a ReduceSum: Tanh stays the end of its own group.
    ReferenceGraph g;
    g.input("x", random_f32({4, 8}));
    g.node("Tanh", {"x"}, "t");
    g.node("ReduceSum", {"t"}, "r", {{"keepdims", int64_t{1}}});
    g.node("Sigmoid", {"t"}, "s");
    g.node("Mul", {"s", "r"}, "out");
    g.output("out");
    std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
    EXPECT_EQ(nodes_of_op(plan, "Tanh"), 1);
    EXPECT_EQ(nodes_of_op(plan, kChain), 1);  // Sigmoid and Mul
  }
  {  // Eight inputs summed: a group stops growing where a fifth input would join (the vulkan
     // kernel binds 4: KernelDef::limits), so x0 + x1 stays a node and the rest are two chains
     // of 4 inputs each.
    ReferenceGraph g;
    std::string v = "x0";
    g.input("x0", random_f32({3, 8}));
    for (int k = 1; k < 8; ++k) {
      g.input(str("x", k), random_f32({3, 8}));
      const std::string y = k == 7 ? "out" : str("s", k);
      g.node("Add", {v, str("x", k)}, y);
      v = y;
    }
    g.output("out");
    std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
    EXPECT_EQ(nodes_of_op(plan, kChain), 2);
    EXPECT_EQ(nodes_of_op(plan, "Add"), 1);
    for (const NodePlan& p : plan)
      if (p.op == kChain) EXPECT_EQ(p.path, Path::native) << p.reason;
  }
  {  // 25 one-operand steps: chains of 12 (the steps the kernel unrolls), the first node alone.
    ReferenceGraph g;
    g.input("x", random_f32({5, 7}, -0.5, 0.5));
    std::string v = "x";
    for (int k = 0; k < 25; ++k) {
      const std::string y = k == 24 ? "out" : str("t", k);
      g.node(k % 2 ? "Neg" : "Tanh", {v}, y);
      v = y;
    }
    g.output("out");
    std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
    EXPECT_EQ(nodes_of_op(plan, kChain), 2);
    EXPECT_EQ(nodes_of_op(plan, "Tanh"), 1);
  }
}

// Programs larger than the vulkan kernel takes (a model file may carry one): the op has no
// limit of its own, the kernel declines with the reason and the decomposition runs them.
TEST(ElementwiseFusion, ProgramsPastTheKernelsLimitsRunAsTheirNodes) {
  SKIP_WITHOUT_VULKAN();
  std::vector<Tensor> five;
  for (int k = 0; k < 5; ++k) five.push_back(random_f32({4, 6}));
  // (((x0 + x1) + x2) + x3) + x4: registers 5..8.
  const Attributes sum5 = chain_program({"Add", "Add", "Add", "Add"}, {0, 1, 5, 2, 6, 3, 7, 4});
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
  for (int k = 0; k < 13; ++k) {
    ops.push_back(k % 2 ? "Neg" : "Sigmoid");
    operands.insert(operands.end(), {k, -1});
  }
  const Attributes long13 = chain_program(ops, operands);
  struct Case {
    std::vector<Tensor> inputs;
    Attributes attrs;
    const char* why;
  };
  for (const Case& c : {Case{five, sum5, "5 inputs, more than the shader binds (4)"},
                        Case{{random_f32({4, 6})}, long13, "13 steps, more than the shader unrolls (12)"}}) {
    SCOPED_TRACE(c.why);
    std::vector<Tensor> dev;
    for (const Tensor& t : c.inputs) dev.push_back(t.to(vulkan0()));
    Attributes attrs = c.attrs;
    KernelContext call;
    call.op = find_op("ai.porta", "ElementwiseChain");
    call.device = vulkan0();
    call.backend = &backend_for(vulkan0());
    call.attrs = &attrs;
    call.inputs = dev;
    Resolution r = resolve_call(call, DType::f32);
    EXPECT_EQ(r.path, Path::composite) << r.reason;
    EXPECT_NE(r.reason.find(c.why), std::string::npos) << r.reason;
    Comparison cmp = compare(call_op("ai.porta::ElementwiseChain", dev, c.attrs).at(0),
                             reference_op("ai.porta::ElementwiseChain", c.inputs, c.attrs, 1).at(0), 1e-5);
    EXPECT_TRUE(cmp.ok) << cmp.message;
  }
}

// A broadcast between inputs that the texel reads do not cover (3x1x5 against 1x4x1) still
// forms a chain; the vulkan kernel declines it and the plan runs its decomposition, which
// gives the same results. A cpu session keeps the nodes (the cpu runs no chain).
TEST(ElementwiseFusion, DeclinedChainsDecomposeAndCpuKeepsNodes) {
  ReferenceGraph g;
  g.input("x", random_f32({3, 1, 5}));
  g.input("y", random_f32({1, 4, 1}));
  g.node("Mul", {"x", "y"}, "m");
  g.node("Sigmoid", {"m"}, "out");
  g.output("out");
  SCOPED_TRACE(str("seed ", seed()));
  std::vector<NodePlan> cpu = plan_and_check_on(g, Device::cpu());
  EXPECT_EQ(nodes_of_op(cpu, kChain), 0);
  EXPECT_EQ(nodes_of_op(cpu, "Sigmoid"), 1);
  if (!device_unusable(vulkan0()).empty()) return;
  std::vector<NodePlan> plan = plan_and_check_on(g, vulkan0());
  const NodePlan* p = chain_of(plan);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->path, Path::composite) << p->reason;
  EXPECT_NE(p->reason.find("broadcasts"), std::string::npos) << p->reason;
}

// A program is checked when a node is built (a model may carry the op): each fault is an
// InvalidModel naming it.
TEST(ElementwiseFusion, ProgramsAreChecked) {
  const Tensor x = random_f32({2, 3}), y = random_f32({2, 3});
  struct Bad {
    std::vector<Tensor> inputs;
    Attributes attrs;
    std::string message;
  };
  const std::vector<Bad> bad{
      {{x}, chain_program({"Gemm"}, {0, -1}), "'Gemm', which is not an elementwise op"},
      {{x}, chain_program({"Relu", "Exp"}, {1, -1, 0, -1}), "should be an input (0..0) or an earlier op's result (1..0)"},
      {{x}, chain_program({"Relu"}, {0, 0}), "takes one operand, got a second"},
      {{x}, chain_program({"Add"}, {-2, -3}, {1.0, 2.0}), "reads only constants"},
      {{x}, chain_program({"Add"}, {0, -3}, {1.0}), "reads constant 1 of 1"},
      {{x, y}, chain_program({"Relu"}, {0, -1}), "input 1 is read by no op"},
      {{x}, chain_program({"Relu", "Exp"}, {0, -1, 0, -1}), "the result of op 0 is read by no later op"},
      {{x}, chain_program({}, {}), "ops should list at least one op"},
      {{x}, chain_program({"Relu"}, {0}), "operands should have 2 entries per op"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.message);
    try {
      call_op("ai.porta::ElementwiseChain", b.inputs, b.attrs);
      ADD_FAILURE() << "no error";
    } catch (const InvalidModel& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace porta::test
