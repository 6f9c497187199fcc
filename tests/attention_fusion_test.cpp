// The rewrite of attention written as its pieces into one ScaledDotProductAttention
// (runtime/graph_fusion.hpp, fuse_attention): the forms exporters write (PyTorch 1.13's
// nn.MultiheadAttention at rank 3 with Q divided and K transposed by (1, 2, 0), 4-D heads with K
// transposed from [B, S, H, D], MaxViT's rank-5 Einsum products, one head of rank 2, scales on
// Q, K^T or the scores, an additive mask on either side of the Add, swin's windows with a
// second mask over [B, nW, ...], a Dropout after the Softmax, a constant mask and V, symbolic
// batch sizes) fuse on
// every device whose attention kernel runs natively, and the session equals the float64
// reference there and the unfused session. Graphs that differ in a detail that changes the
// result or that the fused op cannot express stay as they are, and still give the reference.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/session_plan.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

struct Form {
  std::string label;
  std::function<void(ReferenceGraph&)> build;  // writes "y" (and declares its outputs)
  bool fuses = true;
};

Tensor scalar(double v) { return Tensor::from_values({v}, {}, DType::f32); }

// PyTorch 1.13's multi-head attention over [S, G, D] projections: Q = Transpose(1, 0, 2) / sqrt D,
// K^T = Transpose(1, 2, 0), V = Transpose(1, 0, 2), scores + mask [G, 1, Skv], Softmax, P V.
void torch_mha(ReferenceGraph& g, int64_t sq, int64_t skv, int64_t heads, int64_t d, bool mask_first) {
  g.input("q_in", random_f32({sq, heads, d}));
  g.input("k_in", random_f32({skv, heads, d}));
  g.input("v_in", random_f32({skv, heads, d}));
  Tensor mask = random_f32({heads, 1, skv});
  mask.data<float>()[0] = -std::numeric_limits<float>::infinity();  // a padding key of head 0
  g.input("mask", mask);
  g.node("Transpose", {"q_in"}, "qt", {{"perm", Ints{1, 0, 2}}});
  g.initializer("root_d", scalar(std::sqrt(static_cast<double>(d))));
  g.node("Div", {"qt", "root_d"}, "q");
  g.node("Transpose", {"k_in"}, "kt", {{"perm", Ints{1, 2, 0}}});
  g.node("Transpose", {"v_in"}, "v", {{"perm", Ints{1, 0, 2}}});
  g.node("MatMul", {"q", "kt"}, "s");
  g.node("Add", mask_first ? std::vector<std::string>{"mask", "s"} : std::vector<std::string>{"s", "mask"}, "sm");
  g.node("Softmax", {"sm"}, "p", {{"axis", int64_t{-1}}});
  g.node("MatMul", {"p", "v"}, "y");
  g.output("y");
}

// Heads of rank 4: Q [B, H, Sq, D], K^T from [B, Skv, H, D] by (0, 2, 3, 1), the scores scaled.
void heads4(ReferenceGraph& g, int64_t b, int64_t h, int64_t sq, int64_t skv, int64_t d, int64_t dv) {
  g.input("q", random_f32({b, h, sq, d}));
  g.input("k_in", random_f32({b, skv, h, d}));
  g.input("v", random_f32({b, h, skv, dv}));
  g.node("Transpose", {"k_in"}, "kt", {{"perm", Ints{0, 2, 3, 1}}});
  g.node("MatMul", {"q", "kt"}, "s");
  g.initializer("c", scalar(0.3));
  g.node("Mul", {"c", "s"}, "ss");
  g.node("Softmax", {"ss"}, "p", {{"axis", int64_t{3}}});
}

// Windowed attention as torchvision's swin exports its shifted windows: S [B * nW, H, N, N]
// (+ a relative-position bias [H, N, N]), reshaped to [B, nW, H, N, N], + a mask per window
// [1, nW, 1, N, N] (hiding keys across window seams), reshaped back, Softmax. nW 3, H 2, N 5.
void windows(ReferenceGraph& g, int64_t images, bool bias) {
  const int64_t g_ = images * 3;
  g.input("q", random_f32({g_, 2, 5, 4}));
  g.input("k", random_f32({g_, 2, 5, 4}));
  g.input("v", random_f32({g_, 2, 5, 4}));
  Tensor window_mask = random_f32({1, 3, 1, 5, 5}, -1, 0);
  for (int64_t w = 1; w < 3; ++w)
    for (int64_t i = 0; i < 5; ++i) window_mask.data<float>()[(w * 5 + i) * 5 + (i + w) % 5] = -100.f;
  g.initializer("window_mask", window_mask);
  g.initializer("split", Tensor::from_values({double(images), 3, 2, 5, 5}, {5}, DType::i64));
  g.initializer("merge", Tensor::from_values({-1, 2, 5, 5}, {4}, DType::i64));
  g.node("Transpose", {"k"}, "kt", {{"perm", Ints{0, 1, 3, 2}}});
  g.initializer("c", scalar(0.5));
  g.node("Mul", {"q", "c"}, "qs");
  g.node("MatMul", {"qs", "kt"}, "s");
  std::string scores = "s";
  if (bias) {
    g.initializer("bias", random_f32({2, 5, 5}));
    g.node("Add", {"s", "bias"}, "sb");
    scores = "sb";
  }
  g.node("Reshape", {scores, "split"}, "s5");
  g.node("Add", {"s5", "window_mask"}, "s5m");
  g.node("Reshape", {"s5m", "merge"}, "sm");
  g.node("Softmax", {"sm"}, "p", {{"axis", int64_t{-1}}});
  g.node("MatMul", {"p", "v"}, "y");
  g.output("y");
}

std::vector<Form> forms() {
  std::vector<Form> f;
  f.push_back({"torch MHA, rank 3", [](ReferenceGraph& g) { torch_mha(g, 7, 9, 4, 8, false); }});
  f.push_back({"torch MHA, mask on the left, odd head size",
               [](ReferenceGraph& g) { torch_mha(g, 5, 3, 2, 5, true); }});
  f.push_back({"rank 4, scaled scores, D != Dv", [](ReferenceGraph& g) {
                 heads4(g, 2, 3, 6, 10, 8, 12);
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }});
  f.push_back({"rank 4, inference Dropout after the Softmax", [](ReferenceGraph& g) {
                 heads4(g, 1, 2, 4, 4, 4, 4);
                 g.initializer("ratio", scalar(0.0));
                 g.initializer("training", Tensor::from_values({1}, {}, DType::boolean));
                 g.node("Dropout", {"p", "ratio", "training"}, "pd");
                 g.node("MatMul", {"pd", "v"}, "y");
                 g.output("y");
               }});
  f.push_back({"scales on Q and K^T, constant causal mask and V, K^T a plain input", [](ReferenceGraph& g) {
                 g.input("q", random_f32({2, 4, 6}));
                 g.input("kt", random_f32({2, 6, 5}));
                 g.initializer("v", random_f32({2, 5, 3}));
                 Tensor mask = Tensor::zeros({4, 5}, DType::f32);
                 for (int64_t i = 0; i < 4; ++i)
                   for (int64_t j = i + 1; j < 5; ++j) mask.data<float>()[i * 5 + j] = -1e9f;
                 g.initializer("mask", mask);
                 g.constant("a", scalar(0.5));
                 g.initializer("b", scalar(2.5));
                 g.node("Mul", {"q", "a"}, "qs");
                 g.node("Div", {"kt", "b"}, "kts");
                 g.node("MatMul", {"qs", "kts"}, "s");
                 g.node("Add", {"s", "mask"}, "sm");
                 g.node("Softmax", {"sm"}, "p", {{"axis", int64_t{-1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }});
  f.push_back({"Einsum products at rank 5, K scaled, a rank-4 bias (MaxViT)", [](ReferenceGraph& g) {
                 g.input("q", random_f32({2, 3, 2, 7, 8}));
                 g.input("k", random_f32({2, 3, 2, 7, 8}));
                 g.input("v", random_f32({2, 3, 2, 7, 4}));
                 g.initializer("bias", random_f32({1, 2, 7, 7}));
                 g.initializer("c", scalar(0.35));
                 g.node("Mul", {"k", "c"}, "ks");
                 g.node("Einsum", {"q", "ks"}, "s", {{"equation", std::string("B G H I D, B G H J D -> B G H I J")}});
                 g.node("Add", {"s", "bias"}, "sm");
                 g.node("Softmax", {"sm"}, "p", {{"axis", int64_t{-1}}});
                 g.node("Einsum", {"p", "v"}, "y", {{"equation", std::string("bghij,bghjd->bghid")}});
                 g.output("y");
               }});
  f.push_back({"one head of rank 2", [](ReferenceGraph& g) {
                 g.input("q", random_f32({5, 4}));
                 g.input("kt", random_f32({4, 6}));
                 g.input("v", random_f32({6, 3}));
                 g.node("MatMul", {"q", "kt"}, "s");
                 g.node("Softmax", {"s"}, "p", {{"axis", int64_t{1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }});
  f.push_back({"rank 5 with a mask of rank 5 varying along the heads", [](ReferenceGraph& g) {
                 g.input("q", random_f32({2, 2, 3, 4, 4}));
                 g.input("k", random_f32({2, 2, 3, 5, 4}));
                 g.input("v", random_f32({2, 2, 3, 5, 4}));
                 g.input("mask", random_f32({1, 1, 3, 4, 5}));
                 g.node("Einsum", {"q", "k"}, "s", {{"equation", std::string("abhid,abhjd->abhij")}});
                 g.node("Add", {"mask", "s"}, "sm");
                 g.node("Softmax", {"sm"}, "p", {{"axis", int64_t{-1}}});
                 g.node("Einsum", {"p", "v"}, "y", {{"equation", std::string("abhij,abhjd->abhid")}});
                 g.output("y");
               }});
  f.push_back({"windows: a bias, then a per-window mask over [B, nW, ...] (swin's shifted windows)",
               [](ReferenceGraph& g) { windows(g, 2, true); }});
  f.push_back({"windows: a per-window mask alone, one image", [](ReferenceGraph& g) { windows(g, 1, false); }});
  f.push_back({"scale computed from Q's shape (swin: head size ** -0.5)", [](ReferenceGraph& g) {
                 g.input("q", random_f32({3, 2, 6, 16}), "batch");
                 g.input("k", random_f32({3, 2, 5, 16}), "batch");
                 g.input("v", random_f32({3, 2, 5, 4}), "batch");
                 g.node("Shape", {"q"}, "q_shape");
                 g.initializer("last", Tensor::from_values({3}, {}, DType::i64));
                 g.node("Gather", {"q_shape", "last"}, "d", {{"axis", int64_t{0}}});
                 g.node("Cast", {"d"}, "d_float", {{"to", int64_t{1}}});
                 g.initializer("minus_half", scalar(-0.5));
                 g.node("Pow", {"d_float", "minus_half"}, "inv_root_d");
                 g.node("Mul", {"q", "inv_root_d"}, "qs");
                 g.node("Transpose", {"k"}, "kt", {{"perm", Ints{0, 1, 3, 2}}});
                 g.node("MatMul", {"qs", "kt"}, "s");
                 g.node("Softmax", {"s"}, "p", {{"axis", int64_t{-1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }});
  // Forms that must stay as they are.
  f.push_back({"rank 5 with a mask varying along a merged axis", [](ReferenceGraph& g) {
                 g.input("q", random_f32({2, 2, 3, 4, 4}));
                 g.input("k", random_f32({2, 2, 3, 5, 4}));
                 g.input("v", random_f32({2, 2, 3, 5, 4}));
                 g.input("mask", random_f32({2, 1, 1, 4, 5}));
                 g.node("Einsum", {"q", "k"}, "s", {{"equation", std::string("abhid,abhjd->abhij")}});
                 g.node("Add", {"s", "mask"}, "sm");
                 g.node("Softmax", {"sm"}, "p", {{"axis", int64_t{-1}}});
                 g.node("Einsum", {"p", "v"}, "y", {{"equation", std::string("abhij,abhjd->abhid")}});
                 g.output("y");
               }, false});
  f.push_back({"Einsum with K given as K^T (not the form matched)", [](ReferenceGraph& g) {
                 g.input("q", random_f32({2, 4, 6}));
                 g.input("k", random_f32({2, 6, 4}));
                 g.input("v", random_f32({2, 4, 3}));
                 g.node("Einsum", {"q", "k"}, "s", {{"equation", std::string("hid,hdj->hij")}});
                 g.node("Softmax", {"s"}, "p", {{"axis", int64_t{-1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }, false});
  f.push_back({"probabilities also a graph output", [](ReferenceGraph& g) {
                 heads4(g, 1, 2, 4, 5, 4, 4);
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
                 g.output("p");
               }, false});
  f.push_back({"softmax over another axis", [](ReferenceGraph& g) {
                 g.input("q", random_f32({2, 4, 6}));
                 g.input("kt", random_f32({2, 6, 4}));
                 g.input("v", random_f32({2, 4, 3}));
                 g.node("MatMul", {"q", "kt"}, "s");
                 g.node("Softmax", {"s"}, "p", {{"axis", int64_t{1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }, false});
  f.push_back({"K shared by the heads (broadcast)", [](ReferenceGraph& g) {
                 g.input("q", random_f32({1, 3, 4, 8}));
                 g.input("kt", random_f32({1, 1, 8, 5}));
                 g.input("v", random_f32({1, 3, 5, 8}));
                 g.node("MatMul", {"q", "kt"}, "s");
                 g.node("Softmax", {"s"}, "p", {{"axis", int64_t{-1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }, false});
  f.push_back({"scale that is an input", [](ReferenceGraph& g) {
                 g.input("q", random_f32({2, 4, 6}));
                 g.input("kt", random_f32({2, 6, 4}));
                 g.input("v", random_f32({2, 4, 3}));
                 g.input("t", random_f32({1}, 0.5, 2));
                 g.node("MatMul", {"q", "kt"}, "s");
                 g.node("Mul", {"s", "t"}, "ss");
                 g.node("Softmax", {"ss"}, "p", {{"axis", int64_t{-1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }, false});
  f.push_back({"mask that widens the scores", [](ReferenceGraph& g) {
                 g.input("q", random_f32({1, 4, 6}));
                 g.input("kt", random_f32({1, 6, 4}));
                 g.input("v", random_f32({2, 4, 3}));
                 g.input("mask", random_f32({2, 4, 4}));
                 g.node("MatMul", {"q", "kt"}, "s");
                 g.node("Add", {"s", "mask"}, "sm");
                 g.node("Softmax", {"sm"}, "p", {{"axis", int64_t{-1}}});
                 g.node("MatMul", {"p", "v"}, "y");
                 g.output("y");
               }, false});
  f.push_back({"scores read twice", [](ReferenceGraph& g) {
                 heads4(g, 1, 2, 4, 5, 4, 4);
                 g.node("MatMul", {"p", "v"}, "y");
                 g.node("Neg", {"s"}, "z");
                 g.output("y");
                 g.output("z");
               }, false});
  return f;
}

int fused_nodes(const std::vector<NodePlan>& plan) {
  int n = 0;
  for (const NodePlan& p : plan) n += p.op == "ai.porta::ScaledDotProductAttention";
  return n;
}

// Runs the graph on `device` (plan and two runs), the unfused session, and the reference.
void expect_form(const Form& form, Device device) {
  SCOPED_TRACE(form.label + " on " + device.str() + ", seed " + std::to_string(seed()));
  ReferenceGraph g;
  form.build(g);
  Model model = g.model();
  SessionOptions o;
  o.device = device;
  Session session(model, o);
  const std::vector<NodePlan> plan = session.plan(g.inputs());
  const OpSchema& sdpa = *find_op("ai.porta", "ScaledDotProductAttention");
  const bool native = resolve(sdpa, device, DType::f32).path == Path::native;
  EXPECT_EQ(fused_nodes(plan), form.fuses && native ? 1 : 0);
  if (form.fuses && native) {
    for (const NodePlan& p : plan)
      EXPECT_TRUE(p.op != "Softmax" && p.op != "MatMul" && p.op != "Einsum") << p.node << " (" << p.op << ") is left";
  }
  std::vector<Tensor> runs[2] = {session.run(g.inputs()), session.run(g.inputs())};
  std::vector<Tensor> plain;
  {
    FuseSetting off("0");
    plain = Session(model, o).run(g.inputs());
  }
  for (const std::vector<Tensor>* r : {&runs[0], &runs[1], &plain}) {
    Comparison c = compare(r->at(0), g.reference("y"), 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

TEST(AttentionFusion, EveryFormOnEveryDevice) {
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    for (const Form& form : forms()) expect_form(form, d);
  }
}

// A symbolic batch size: each batch size gets its own plan, and each fuses.
TEST(AttentionFusion, EveryPlanOfASymbolicBatch) {
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE(batch);
    ReferenceGraph g;
    g.input("q", random_f32({batch, 2, 5, 8}), "batch");
    g.input("k", random_f32({batch, 2, 7, 8}), "batch");
    g.input("v", random_f32({batch, 2, 7, 8}), "batch");
    g.node("Transpose", {"k"}, "kt", {{"perm", Ints{0, 1, 3, 2}}});
    g.node("MatMul", {"q", "kt"}, "s");
    g.node("Softmax", {"s"}, "p", {{"axis", int64_t{-1}}});
    g.node("MatMul", {"p", "v"}, "y");
    g.output("y");
    ReferenceRun run = run_against_reference(g, {"y"});
    EXPECT_EQ(fused_nodes(run.plan), 1);
    EXPECT_EQ(nodes_of_op(run.plan, "Transpose"), 0);  // K^T of K: K is read as it is
  }
}

// A scale that only a plan's constant folding knows (swin computes its head size from the shape
// of a value load-time inference cannot size): the annotated graph carries it as
// Value::folded, and the rewrite folds the Mul into the op's scale. Without it the Mul is just
// how Q is computed: it stays, and the op's scale is 1.
TEST(AttentionFusion, ScaleFromAPlansFoldedValue) {
  ReferenceGraph g;
  g.input("q", random_f32({2, 3, 4, 8}));
  g.input("kt", random_f32({2, 3, 8, 5}));
  g.input("v", random_f32({2, 3, 5, 8}));
  g.input("c_source", random_f32({1}));
  g.node("Identity", {"c_source"}, "c");  // a value some node computes
  g.node("Mul", {"q", "c"}, "qs");
  g.node("MatMul", {"qs", "kt"}, "s");
  g.node("Softmax", {"s"}, "p", {{"axis", int64_t{-1}}});
  g.node("MatMul", {"p", "v"}, "y");
  g.output("y");
  Model model = g.model();
  auto annotated = std::make_shared<Graph>(*model.graph_ptr());
  std::vector<Shape> shapes;
  for (int v : annotated->inputs) shapes.push_back(g.inputs().at(annotated->values[v].name).shape());
  detail::annotate_shapes(*annotated, shapes, std::vector<Tensor>(shapes.size()));
  const int c = annotated->find("c");
  ASSERT_GE(c, 0);
  ASSERT_GE(annotated->values[c].producer, 0);
  ASSERT_FALSE(annotated->values[c].constant.defined());
  auto expect = [](const Graph& graph, int muls, double scale) {
    int fused = 0, mul_nodes = 0;
    for (const Node& node : graph.nodes) {
      mul_nodes += node.op->name == "Mul";
      if (node.op->name != "ScaledDotProductAttention") continue;
      ++fused;
      EXPECT_NEAR(node.attrs.get_float("scale"), scale, 1e-7);
    }
    EXPECT_EQ(fused, 1);
    EXPECT_EQ(mul_nodes, muls);
  };
  expect(*detail::fuse_attention(annotated, Device::cpu(), true), 1, 1.0);
  annotated->values[c].folded = Tensor::from_values({0.3}, {1}, DType::f32);
  expect(*detail::fuse_attention(annotated, Device::cpu(), true), 0, 0.3);
}

// Sessions that keep every value, and PORTA_FUSE=0, see the pieces.
TEST(AttentionFusion, OffWhenValuesAreKeptOrFusionIsOff) {
  ReferenceGraph g;
  torch_mha(g, 4, 4, 2, 4, false);
  Model model = g.model();
  SessionOptions keep;
  keep.keep_values = true;
  EXPECT_EQ(fused_nodes(Session(model, keep).plan(g.inputs())), 0);
  FuseSetting off("0");
  EXPECT_EQ(fused_nodes(Session(model).plan(g.inputs())), 0);
}

// Under bf16 the fused op computes like the composite did (products in bf16, softmax in f32):
// the result stays near the float64 reference.
TEST(AttentionFusion, Bf16SessionsFuseToo) {
  ReferenceGraph g;
  heads4(g, 1, 4, 64, 80, 32, 32);
  g.node("MatMul", {"p", "v"}, "y");
  g.output("y");
  SessionOptions o;
  o.precision = Precision::bf16;
  Session session(g.model(), o);
  EXPECT_EQ(fused_nodes(session.plan(g.inputs())), 1);
  Comparison c = compare(session.run(g.inputs()).at(0), g.reference("y"), 2e-2);
  EXPECT_TRUE(c.ok) << c.message;
}

}  // namespace
}  // namespace porta::test
