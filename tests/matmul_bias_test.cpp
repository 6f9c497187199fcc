// A Linear layer's bias folded into its MatMul (runtime/matmul_bias_fusion.cpp, MatMul's
// porta-internal input `porta_bias`): sessions fold the Add of a constant row after a MatMul,
// in either operand order and through PyTorch's Identity-shared initializers, on every cpu
// implementation (gemv for a few rows, panels for more, onednn past them, batched A), in a bf16 session with
// the bias kept f32, and on vulkan:0 (both implementations; in an f16 session the bias goes
// f16 with the operands, as its kernels take it); they leave every other Add alone (a bias of rank 2, a bias that is
// not a constant, a product read twice, a 1-D B). Eager calls with the bias, in f32 and f64,
// against the float64 reference, and bad biases refused with what was expected.
#include <optional>
#include <string>
#include <vector>

#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// x [shape] -> MatMul(x, W [k, n]) -> Add with the row b [n] (`bias_first`: Add(b, y)) -> out;
// `through_identity`: W and b reach the MatMul and the Add through Identity nodes.
ReferenceGraph linear(const Shape& x, int64_t n, bool bias_first = false, bool through_identity = false) {
  ReferenceGraph g;
  g.input("x", random_f32(x));
  g.initializer("w", random_f32({x.back(), n}, -0.2, 0.2));
  g.initializer("b", random_f32({n}));
  std::string b = "b", w = "w";
  if (through_identity) {  // as PyTorch shares a first layer's bias and weight with a second's
    g.node("Identity", {"b"}, "b_shared");
    g.node("Identity", {"w"}, "w_shared");
    b = "b_shared";
    w = "w_shared";
  }
  g.node("MatMul", {"x", w}, "y");
  if (bias_first) g.node("Add", {b, "y"}, "out");
  else g.node("Add", {"y", b}, "out");
  g.output("out");
  return g;
}

TEST(MatMulBias, SessionsFoldTheBiasOnBothImplementations) {
  struct Case {
    Shape x;
    int64_t n;
    const char* impl;
  };
  // One row against 300x700 weights (the panels; the gemv loop with them off); a batched A of
  // 3 rows (one row per batch, folded into rows: the same two); 5 rows (panels); 80 (past the
  // panels' rows); a batch of tokens folded into rows.
  const std::vector<Case> cases = {
      {{1, 300}, 700, "gemv"},      {{3, 1, 300}, 700, "gemv"}, {{1, 300}, 700, "panels"},
      {{3, 1, 300}, 700, "panels"}, {{5, 300}, 700, "panels"},  {{80, 300}, 700, "onednn"},
      {{2, 7, 64}, 96, "onednn"}};
  for (const Case& c : cases)
    for (bool bias_first : {false, true})
      for (bool identity : {false, true}) {
        SCOPED_TRACE(str(shape_str(c.x), " x ", c.x.back(), "x", c.n, bias_first ? ", Add(b, y)" : ", Add(y, b)",
                         identity ? ", weight and bias through Identity nodes" : "", " (seed ", seed(), ")"));
        std::optional<DisabledKernels> off;
        if (std::string(c.impl) == "gemv") off.emplace("cpu:MatMul:panels");
        ReferenceRun r = run_against_reference(linear(c.x, c.n, bias_first, identity), {"out"});
        EXPECT_EQ(nodes_of_op(r.plan, "Add"), 0);
        for (const NodePlan& p : r.plan)  // the weight's Identity folds to a constant; the bias's goes
          if (p.op == "Identity") EXPECT_EQ(p.path, Path::folded) << p.node << ": " << p.reason;
        EXPECT_EQ(cpu_impl_of(r.plan, "MatMul"), c.impl);
      }
}

TEST(MatMulBias, OtherAddsStay) {
  {  // a bias of rank 2 ([1, n]) may change the result's rank: not folded
    ReferenceGraph g;
    g.input("x", random_f32({4, 32}));
    g.initializer("w", random_f32({32, 24}));
    g.initializer("b", random_f32({1, 24}));
    g.node("MatMul", {"x", "w"}, "y");
    g.node("Add", {"y", "b"}, "out");
    g.output("out");
    EXPECT_EQ(nodes_of_op(run_against_reference(g, {"out"}).plan, "Add"), 1) << "rank-2 bias";
  }
  {  // a bias that is a graph input, not a constant
    ReferenceGraph g;
    g.input("x", random_f32({4, 32}));
    g.input("b", random_f32({24}));
    g.initializer("w", random_f32({32, 24}));
    g.node("MatMul", {"x", "w"}, "y");
    g.node("Add", {"y", "b"}, "out");
    g.output("out");
    EXPECT_EQ(nodes_of_op(run_against_reference(g, {"out"}).plan, "Add"), 1) << "bias not a constant";
  }
  {  // the product is read by another node too
    ReferenceGraph g;
    g.input("x", random_f32({4, 32}));
    g.initializer("w", random_f32({32, 24}));
    g.initializer("b", random_f32({24}));
    g.node("MatMul", {"x", "w"}, "y");
    g.node("Add", {"y", "b"}, "s");
    g.node("Mul", {"y", "s"}, "out");
    g.output("out");
    EXPECT_EQ(nodes_of_op(run_against_reference(g, {"out"}).plan, "Add"), 1) << "product read twice";
  }
  {  // B 1-D: the product has no columns, so no bias; an Add of its shape is its residual
    ReferenceGraph g;
    g.input("x", random_f32({4, 32}));
    g.initializer("w", random_f32({32}));
    g.initializer("b", random_f32({4}));
    g.node("MatMul", {"x", "w"}, "y");
    g.node("Add", {"y", "b"}, "out");
    g.output("out");
    const std::vector<NodePlan> plan = run_against_reference(g, {"out"}).plan;
    EXPECT_EQ(nodes_of_op(plan, "Add"), 0) << "1-D B";
    for (const NodePlan& p : plan)
      if (p.op == "MatMul")
        EXPECT_NE(p.reason.find("adds the other input of the Add"), std::string::npos) << p.reason;
  }
}

// In a bf16 session the product computes in bf16 and the bias is added in f32: it is not
// converted, and the result is as close as the bf16 product alone allows.
TEST(MatMulBias, Bf16SessionsKeepTheBiasF32) {
  SKIP_WITHOUT_CPU_BF16();
  ReferenceGraph g = linear({2, 9, 256}, 128);
  SessionOptions o;
  o.precision = Precision::bf16;
  Session s(g.model(), o);
  const std::vector<NodePlan> plan = s.plan(g.inputs());
  EXPECT_EQ(nodes_of_op(plan, "Add"), 0);
  for (const NodePlan& p : plan)
    if (p.op == "MatMul") {
      EXPECT_EQ(p.precision, DType::bf16) << p.precision_note;
      EXPECT_EQ(p.precision_note.find("b converted"), std::string::npos) << p.precision_note;
    }
  Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 2e-2);
  EXPECT_TRUE(c.ok) << c.message;
}

// On vulkan:0 both MatMul implementations take the bias ("texel" on CPU-like devices, "tiled"
// where it is disabled), for a Linear layer and a batched A; and in an f16 session the bias
// is converted with the operands (the Vulkan kernels add it in the operands' format).
TEST(MatMulBias, VulkanSessionsFoldTheBias) {
  if (!device_unusable(Device::parse("vulkan:0")).empty()) GTEST_SKIP() << "no vulkan:0";
  for (const char* disabled : {"", "vulkan:MatMul:texel"}) {
    DisabledKernels off(disabled);
    for (const Shape& x : {Shape{5, 300}, Shape{2, 7, 64}, Shape{3, 4, 1, 33}}) {
      SCOPED_TRACE(str(shape_str(x), disabled[0] ? " without texel" : "", " (seed ", seed(), ")"));
      ReferenceGraph g = linear(x, 70);
      SessionOptions o;
      o.device = Device::parse("vulkan:0");
      Session s(g.model(), o);
      const std::vector<NodePlan> plan = s.plan(g.inputs());
      EXPECT_EQ(nodes_of_op(plan, "Add"), 0);
      for (const NodePlan& p : plan) EXPECT_EQ(p.device, o.device) << p.node << ": " << p.reason;
      Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 1e-5);
      EXPECT_TRUE(c.ok) << c.message;
    }
  }
  ReferenceGraph g = linear({2, 9, 64}, 48);
  SessionOptions o;
  o.device = Device::parse("vulkan:0");
  o.precision = Precision::f16;
  Session s(g.model(), o);
  for (const NodePlan& p : s.plan(g.inputs())) {
    EXPECT_EQ(p.device, o.device) << p.node << ": " << p.reason;
    if (p.op == "MatMul") EXPECT_NE(p.precision_note.find("b converted to f16"), std::string::npos) << p.precision_note;
  }
  Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 1e-2);
  EXPECT_TRUE(c.ok) << c.message;
}

// Eager calls carrying the bias (the dispatcher hands them only to kernels that declare it).
TEST(MatMulBias, EagerCallsAddTheBias) {
  for (DType t : {DType::f32, DType::f64}) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<Tensor> in = {random_f32({3, 4, 17}).cast(t), random_f32({17, 10}).cast(t), random_f32({10}).cast(t)};
    Comparison c = compare(call_op("MatMul", in).at(0), reference_op("MatMul", in).at(0), 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
  }
  // An empty reduction is the bias alone.
  std::vector<Tensor> in = {random_f32({2, 0}), random_f32({0, 5}), random_f32({5})};
  Comparison c = compare(call_op("MatMul", in).at(0), reference_op("MatMul", in).at(0), 0);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(MatMulBias, BadBiasesAreRefused) {
  const Tensor a = random_f32({3, 8}), b = random_f32({8, 6});
  std::string m = error_message<ShapeError>([&] { call_op("MatMul", {a, b, random_f32({5})}); });
  EXPECT_NE(m.find("one value per column"), std::string::npos) << m;
  EXPECT_NE(m.find("6 columns"), std::string::npos) << m;
  m = error_message<ShapeError>([&] { call_op("MatMul", {a, b, random_f32({1, 6})}); });
  EXPECT_NE(m.find("got 1x6"), std::string::npos) << m;
  m = error_message<ShapeError>([&] { call_op("MatMul", {a, random_f32({8}), random_f32({3})}); });
  EXPECT_NE(m.find("B has no columns"), std::string::npos) << m;
  m = error_message<DTypeError>([&] { call_op("MatMul", {a.cast(DType::f64), b.cast(DType::f64), random_f32({6}).cast(DType::f16)}); });
  EXPECT_NE(m.find("porta_bias must be f32 or A's dtype"), std::string::npos) << m;
}

}  // namespace
}  // namespace porta::test
