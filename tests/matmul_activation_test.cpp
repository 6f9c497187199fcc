// The activation after a MatMul or Gemm folded into it (their porta-internal porta_activation
// attributes; runtime/graph_fusion.hpp's fuse_activations after fuse_matmul_bias): sessions
// fold Relu, Clip, Sigmoid and GELU (PyTorch's five-node erf export, which sessions rewrite to
// one Gelu first) after a Linear layer, with and without its bias, on both cpu implementations (gemv for a
// few rows, onednn for more), in a bf16 session whose MatMul writes f32 for its readers or
// bf16 for the next MatMul, and on vulkan:0 with both implementations. Eager calls carry the
// attributes (GELU's tanh form too) in f32, f64 and bf16, through the empty reduction; an
// unknown name is refused. Gemm (a classifier's Linear on a 2-D input, transB = 1, C the bias)
// likewise on cpu (gemv and onednn) and vulkan:0, and eagerly with transposes, alpha and beta.
#include <optional>
#include <string>
#include <vector>

#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

enum class Act { relu, clip6, sigmoid, gelu_erf_export };

const char* act_name(Act a) {
  switch (a) {
    case Act::relu: return "Relu";
    case Act::clip6: return "Clip(0, 6)";
    case Act::sigmoid: return "Sigmoid";
    case Act::gelu_erf_export: return "GELU as PyTorch exports it";
  }
  return "";
}

// Writes act(in) as `out` into g.
void add_activation(ReferenceGraph& g, Act a, const std::string& in, const std::string& out) {
  switch (a) {
    case Act::relu: g.node("Relu", {in}, out); return;
    case Act::clip6:
      g.initializer(out + "_lo", Tensor::scalar(0.0, DType::f32));
      g.initializer(out + "_hi", Tensor::scalar(6.0, DType::f32));
      g.node("Clip", {in, out + "_lo", out + "_hi"}, out);
      return;
    case Act::sigmoid: g.node("Sigmoid", {in}, out); return;
    case Act::gelu_erf_export:  // Div(x, sqrt 2), Erf, Add 1, Mul(x, .), Mul(., 0.5)
      g.initializer(out + "_sqrt2", Tensor::scalar(1.4142135623730951, DType::f32));
      g.initializer(out + "_one", Tensor::scalar(1.0, DType::f32));
      g.initializer(out + "_half", Tensor::scalar(0.5, DType::f32));
      g.node("Div", {in, out + "_sqrt2"}, out + "_d");
      g.node("Erf", {out + "_d"}, out + "_e");
      g.node("Add", {out + "_e", out + "_one"}, out + "_a");
      g.node("Mul", {in, out + "_a"}, out + "_m");
      g.node("Mul", {out + "_m", out + "_half"}, out);
      return;
  }
}

// x -> MatMul(x, W [k, n]) (+ b [n]) -> act -> out.
ReferenceGraph linear_act(const Shape& x, int64_t n, Act a, bool bias) {
  ReferenceGraph g;
  g.input("x", random_f32(x, -2, 2));
  g.initializer("w", random_f32({x.back(), n}, -0.2, 0.2));
  g.node("MatMul", {"x", "w"}, "y");
  std::string pre = "y";
  if (bias) {
    g.initializer("b", random_f32({n}));
    g.node("Add", {"y", "b"}, "yb");
    pre = "yb";
  }
  add_activation(g, a, pre, "out");
  g.output("out");
  return g;
}

const std::vector<Act> kActs = {Act::relu, Act::clip6, Act::sigmoid, Act::gelu_erf_export};

// Only the MatMul runs: its bias and activation are in it.
void expect_only_matmul(const std::vector<NodePlan>& plan) {
  for (const NodePlan& p : plan) EXPECT_EQ(p.op, "MatMul") << p.node << " still runs: " << p.reason;
}

TEST(MatMulActivation, CpuSessionsFoldItOnEveryImplementation) {
  struct Case {
    Shape x;
    int64_t n;
    const char* impl;
  };
  const std::vector<Case> cases = {{{1, 300}, 700, "gemv"},
                                   {{1, 300}, 700, "panels"},
                                   {{5, 300}, 700, "panels"},
                                   {{80, 300}, 700, "onednn"},
                                   {{2, 7, 64}, 96, "onednn"}};
  for (const Case& c : cases)
    for (Act a : kActs)
      for (bool bias : {true, false}) {
        SCOPED_TRACE(str(shape_str(c.x), " x ", c.x.back(), "x", c.n, ", ", act_name(a), bias ? ", bias" : "",
                         " (seed ", seed(), ")"));
        // One row against a constant B runs the panels; the gemv loop takes it with them off.
        std::optional<DisabledKernels> off;
        if (std::string(c.impl) == "gemv") off.emplace("cpu:MatMul:panels");
        ReferenceRun r = run_against_reference(linear_act(c.x, c.n, a, bias), {"out"});
        expect_only_matmul(r.plan);
        EXPECT_EQ(cpu_impl_of(r.plan, "MatMul"), c.impl);
      }
}

// bf16: the MatMul writes f32 for an f32 reader (the graph output) and bf16 for the next
// MatMul; either way the activation is applied to the f32 sums.
TEST(MatMulActivation, Bf16SessionsApplyItToTheF32Sums) {
  SKIP_WITHOUT_CPU_BF16();
  for (Act a : {Act::relu, Act::gelu_erf_export}) {
    SCOPED_TRACE(str(act_name(a), " (seed ", seed(), ")"));
    ReferenceGraph g;
    g.input("x", random_f32({2, 9, 256}, -2, 2));
    g.initializer("w1", random_f32({256, 128}, -0.1, 0.1));
    g.initializer("b1", random_f32({128}));
    g.initializer("w2", random_f32({128, 64}, -0.1, 0.1));
    g.node("MatMul", {"x", "w1"}, "y1");
    g.node("Add", {"y1", "b1"}, "z1");
    add_activation(g, a, "z1", "h");
    g.node("MatMul", {"h", "w2"}, "y2");
    add_activation(g, a, "y2", "out");
    g.output("out");
    SessionOptions o;
    o.precision = Precision::bf16;
    Session s(g.model(), o);
    const std::vector<NodePlan> plan = s.plan(g.inputs());
    int matmuls = 0;
    for (const NodePlan& p : plan)
      if (p.op == "MatMul") {
        ++matmuls;
        EXPECT_EQ(p.precision, DType::bf16) << p.precision_note;
      } else {
        EXPECT_EQ(p.op, "Cast") << p.node << " still runs: " << p.reason;
      }
    EXPECT_EQ(matmuls, 2);
    Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 3e-2);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

// On vulkan:0 both MatMul implementations apply it ("texel" on CPU-like devices, "tiled" where
// that one is disabled).
TEST(MatMulActivation, VulkanSessionsFoldIt) {
  if (!device_unusable(Device::parse("vulkan:0")).empty()) GTEST_SKIP() << "no vulkan:0";
  for (const char* disabled : {"", "vulkan:MatMul:texel"}) {
    DisabledKernels off(disabled);
    for (Act a : kActs)
      for (const Shape& x : {Shape{5, 300}, Shape{3, 4, 1, 33}}) {
        SCOPED_TRACE(str(shape_str(x), ", ", act_name(a), disabled[0] ? " without texel" : "", " (seed ", seed(), ")"));
        ReferenceGraph g = linear_act(x, 70, a, true);
        SessionOptions o;
        o.device = Device::parse("vulkan:0");
        Session s(g.model(), o);
        const std::vector<NodePlan> plan = s.plan(g.inputs());
        expect_only_matmul(plan);
        for (const NodePlan& p : plan) EXPECT_EQ(p.device, o.device) << p.node << ": " << p.reason;
        Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 1e-5);
        EXPECT_TRUE(c.ok) << c.message;
      }
  }
}

Attributes activation(const std::string& name, double alpha = 0, double beta = 0) {
  return Attributes{{"porta_activation", name}, {"porta_activation_alpha", alpha}, {"porta_activation_beta", beta}};
}

TEST(MatMulActivation, EagerCallsApplyIt) {
  for (const Attributes& at : {activation("Relu"), activation("Gelu"), activation("GeluTanh"),
                               activation("Clip", -0.5, 0.5), activation("Swish")})
    for (DType t : {DType::f32, DType::f64, DType::bf16}) {
      SCOPED_TRACE(str(at.get_string("porta_activation"), " ", dtype_name(t), " (seed ", seed(), ")"));
      std::vector<Tensor> in = {random_f32({3, 4, 17}, -2, 2).cast(t), random_f32({17, 10}).cast(t),
                                random_f32({10}).cast(t)};
      std::vector<Tensor> ref_in;
      for (const Tensor& v : in) ref_in.push_back(v.cast(DType::f64));
      Comparison c = compare(call_op("MatMul", in, at).at(0), reference_op("MatMul", ref_in, at).at(0),
                             t == DType::bf16 ? 2e-2 : 1e-5);
      EXPECT_TRUE(c.ok) << c.message;
      // One row: the gemv loop (f32).
      in[0] = random_f32({1, 17}, -2, 2).cast(t);
      ref_in[0] = in[0].cast(DType::f64);
      c = compare(call_op("MatMul", in, at).at(0), reference_op("MatMul", ref_in, at).at(0),
                  t == DType::bf16 ? 2e-2 : 1e-5);
      EXPECT_TRUE(c.ok) << c.message;
    }
  // An empty reduction is Act(bias).
  std::vector<Tensor> in = {random_f32({2, 0}), random_f32({0, 5}), random_f32({5}, -2, 2)};
  Comparison c = compare(call_op("MatMul", in, activation("Relu")).at(0),
                         reference_op("MatMul", in, activation("Relu")).at(0), 0);
  EXPECT_TRUE(c.ok) << c.message;
}

// x [m, k] -> Gemm(x, W [n, k], b [n], transB = 1) -> act -> out.
ReferenceGraph gemm_act(int64_t m, int64_t k, int64_t n, Act a) {
  ReferenceGraph g;
  g.input("x", random_f32({m, k}, -2, 2));
  g.initializer("w", random_f32({n, k}, -0.2, 0.2));
  g.initializer("b", random_f32({n}));
  g.node("Gemm", {"x", "w", "b"}, "y", {{"transB", int64_t{1}}});
  add_activation(g, a, "y", "out");
  g.output("out");
  return g;
}

TEST(MatMulActivation, GemmSessionsFoldIt) {
  std::vector<std::string> devices = {"cpu"};
  if (device_unusable(Device::parse("vulkan:0")).empty()) devices.push_back("vulkan:0");
  for (const std::string& d : devices)
    for (Act a : kActs)
      for (int64_t m : {1, 6, 80}) {  // one row: the cpu's gemv loop; a few: panels; more: onednn
        SCOPED_TRACE(str(d, ", ", m, " rows, ", act_name(a), " (seed ", seed(), ")"));
        ReferenceGraph g = gemm_act(m, 300, 130, a);
        SessionOptions o;
        o.device = Device::parse(d);
        Session s(g.model(), o);
        const std::vector<NodePlan> plan = s.plan(g.inputs());
        for (const NodePlan& p : plan) {
          EXPECT_EQ(p.op, "Gemm") << p.node << " still runs: " << p.reason;
          EXPECT_EQ(p.device, o.device) << p.node << ": " << p.reason;
        }
        if (d == "cpu")
          EXPECT_NE(plan.at(0).reason.find(m == 1 ? "'gemv'" : m == 6 ? "'panels'" : "'onednn'"), std::string::npos)
              << plan.at(0).reason;
        Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 1e-5);
        EXPECT_TRUE(c.ok) << c.message;
      }
}

TEST(MatMulActivation, EagerGemmCallsApplyIt) {
  for (const char* name : {"Relu", "Gelu", "HardSwish"})
    for (DType t : {DType::f32, DType::f64, DType::bf16}) {
      SCOPED_TRACE(str(name, " ", dtype_name(t), " (seed ", seed(), ")"));
      Attributes at = activation(name);
      at.set("transA", int64_t{1});
      at.set("alpha", 0.5);
      at.set("beta", 2.0);
      std::vector<Tensor> in = {random_f32({17, 4}, -2, 2).cast(t), random_f32({17, 9}).cast(t),
                                random_f32({4, 1}).cast(t)};
      std::vector<Tensor> ref_in;
      for (const Tensor& v : in) ref_in.push_back(v.cast(DType::f64));
      Comparison c = compare(call_op("Gemm", in, at).at(0), reference_op("Gemm", ref_in, at).at(0),
                             t == DType::bf16 ? 2e-2 : 1e-5);
      EXPECT_TRUE(c.ok) << c.message;
    }
}

TEST(MatMulActivation, UnknownNamesAreRefused) {
  std::string m = error_message<InvalidArgument>(
      [&] { call_op("MatMul", {random_f32({3, 8}), random_f32({8, 6})}, activation("Softplus")); });
  EXPECT_NE(m.find("[MatMul] porta_activation"), std::string::npos) << m;
  EXPECT_NE(m.find("\"GeluTanh\""), std::string::npos) << m;
  EXPECT_NE(m.find("got \"Softplus\""), std::string::npos) << m;
  m = error_message<InvalidArgument>(
      [&] { call_op("Gemm", {random_f32({3, 8}), random_f32({8, 6})}, activation("Softplus")); });
  EXPECT_NE(m.find("[Gemm] porta_activation"), std::string::npos) << m;
}

}  // namespace
}  // namespace porta::test
