// The RMS-norm-into-product rewrite (runtime/graph_fusion.hpp, fuse_rms_norm_matmul): an RMSNorm
// written out (one RmsNorm by then) read by projections alone, as LLaMA's blocks are (a packed
// q/k/v MatMul; three separate ones; the output head; the feed-forward layer, one GatedLinear
// by then), leaves no norm node where the device runs the fused ops natively (vulkan:0): each
// MatMul becomes one RmsNormMatMul, each GatedLinear normalizes its X itself. On every test
// device the session equals the float64 reference of the graph as written. Graphs that differ
// in any detail keep their norm, with the same results: the norm also read by an Add, or as a
// graph output; a product with an activation fused into it; a weight that is a graph input;
// products of at most 8 rows (the kernels decline them).
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Form {
  std::string label;
  bool fuses = true;
  int products = 1;           // MatMuls reading the norm
  bool bias = false;          // an Add of a bias row after each (fused into the MatMul)
  bool gated = false;         // a SwiGLU layer (two MatMuls, SiLU, Mul) reads the norm instead
  bool also_added = false;    // an Add reads the norm too
  bool norm_output = false;   // the norm is also a graph output
  bool relu = false;          // a Relu after the first product
  bool weight_input = false;  // the first weight is a graph input
};

ReferenceGraph graph(const Form& f, const Shape& x, int64_t N) {
  ReferenceGraph g;
  const int64_t d = x.back();
  g.input("x", random_f32(x, -3, 3));
  g.initializer("w", random_f32({d}, 0.5, 1.5));
  g.initializer("p", Tensor::from_values({2.0}, {}, DType::f32));
  g.initializer("eps", Tensor::from_values({1e-6}, {}, DType::f32));
  g.initializer("one", Tensor::from_values({1.0}, {}, DType::f32));
  g.node("Pow", {"x", "p"}, "sq");
  g.node("ReduceMean", {"sq"}, "ms", {{"axes", std::vector<int64_t>{-1}}});
  g.node("Add", {"ms", "eps"}, "ve");
  g.node("Sqrt", {"ve"}, "s");
  g.node("Div", {"one", "s"}, "r");
  g.node("Mul", {"x", "r"}, "n");
  g.node("Mul", {"n", "w"}, "normed");
  if (f.gated) {
    g.initializer("wg", random_f32({d, N}, -0.3, 0.3));
    g.initializer("wu", random_f32({d, N}, -0.3, 0.3));
    g.node("MatMul", {"normed", "wg"}, "a");
    g.node("Sigmoid", {"a"}, "sa");
    g.node("Mul", {"a", "sa"}, "gate");
    g.node("MatMul", {"normed", "wu"}, "up");
    g.node("Mul", {"gate", "up"}, "glu");
  }
  for (int i = 0; i < f.products; ++i) {
    const std::string k = std::to_string(i);
    if (i == 0 && f.weight_input) g.input("b" + k, random_f32({d, N}, -0.3, 0.3));
    else g.initializer("b" + k, random_f32({d, N}, -0.3, 0.3));
    if (f.bias) g.initializer("c" + k, random_f32({N}));
    const bool more = f.bias || (i == 0 && f.relu);
    g.node("MatMul", {"normed", "b" + k}, more ? "p" + k : "y" + k);
    if (f.bias) g.node("Add", {"p" + k, "c" + k}, i == 0 && f.relu ? "q" + k : "y" + k);
    if (i == 0 && f.relu) g.node("Relu", {f.bias ? "q" + k : "p" + k}, "y" + k);
  }
  // One output: the products' (and the GatedLinear's) sum, the norm plus x added to it.
  std::vector<std::string> terms;
  if (f.gated) terms.push_back("glu");
  for (int i = 0; i < f.products; ++i) terms.push_back("y" + std::to_string(i));
  if (f.also_added) {
    g.node("Add", {"normed", "x"}, "sum");
    g.initializer("back", random_f32({x.back(), N}, -0.3, 0.3));
    g.node("MatMul", {"sum", "back"}, "summed");
    terms.push_back("summed");
  }
  std::string acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    const std::string next = i + 1 == terms.size() ? "out" : "t" + std::to_string(i);
    g.node("Add", {acc, terms[i]}, next);
    acc = next;
  }
  if (terms.size() == 1) g.node("Identity", {acc}, "out");
  g.output("out");
  if (f.norm_output) g.output("normed");
  return g;
}

TEST(RmsNormMatMulFusion, NormsReadByProjectionsGoIntoThem) {
  const std::vector<Form> forms{
      {"a packed q/k/v projection"},
      {"three projections with biases", true, 3, true},
      {"a SwiGLU layer", true, 0, false, true},
      {"a SwiGLU layer and a projection", true, 1, false, true},
      {"the norm also added", false, 1, false, false, true},
      {"the norm also an output", false, 1, false, false, false, true},
      {"a Relu after the product", false, 1, false, false, false, false, true},
      {"a weight that is an input", false, 1, false, false, false, false, false, true},
  };
  const OpSchema* op = find_op("ai.porta", "RmsNormMatMul");
  ASSERT_NE(op, nullptr);
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool native = resolve(*op, device, DType::f32).path == Path::native;
    const bool norm_native = resolve(*find_op("ai.porta", "RmsNorm"), device, DType::f32).path == Path::native;
    for (const Form& f : forms)
      // 32 rows (vec4 stores), 21 rows of 12 outputs, 4 rows (the "rows" MatMul's ground).
      for (const auto& [x, N] : {std::pair{Shape{2, 16, 64}, int64_t{48}}, {Shape{3, 7, 32}, int64_t{12}},
                                 {Shape{4, 32}, int64_t{16}}}) {
        SCOPED_TRACE(str(f.label, ", x ", shape_str(x), " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(graph(f, x, N), device, 3e-5);
        const bool fused = f.fuses && native && shape_numel(x) / x.back() > 8;
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::RmsNorm"), !fused && norm_native ? 1 : 0);
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::RmsNormMatMul"), fused ? f.products : 0);
        if (fused)
          for (const NodePlan& p : plan)
            if (p.op == "ai.porta::RmsNormMatMul" || p.op == "ai.porta::GatedLinear")
              EXPECT_EQ(p.path, Path::native) << p.reason;
      }
  }
}

}  // namespace
}  // namespace porta::test
