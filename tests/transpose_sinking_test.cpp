// Transposes moved across row-wise products (runtime/transpose_sinking.cpp): the two patterns
// PyTorch's nn.MultiheadAttention (batch_first = True) exports around its projections, built
// here with fresh random values and odd sizes, each checked against the float64 reference of
// the graph as written on every test device (and with PORTA_FUSE=0 on the cpu), and whether
// the Transpose moved and joined a chain of copies. Cases that must keep their Transpose: a
// product read by something other than data movement, a Gemm whose C has one row per row, a
// Transpose that moves the last axis, a product read twice.
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

const NodePlan* plan_of(const std::vector<NodePlan>& plan, const std::string& node) {
  for (const NodePlan& p : plan)
    if (p.node == node) return &p;
  return nullptr;
}

bool in_plan(const std::vector<NodePlan>& plan, const std::string& node) { return plan_of(plan, node) != nullptr; }

// The devices here that run (a GPU kind without its driver does not). The plans' moves are
// checked on the cpu and on vulkan, whose StridedCopy is native; elsewhere the numbers are.
std::vector<Device> usable_devices() {
  std::vector<Device> out;
  for (Device d : test_devices())
    if (device_unusable(d).empty()) out.push_back(d);
  return out;
}

bool moves_checked(Device d) { return d.type == DeviceType::cpu || device_type_name(d.type) == "vulkan"; }

// The graph's nodes run on `device` as planned, against the reference.
std::vector<NodePlan> checked_plan(const ReferenceGraph& g, Device device) {
  return plan_and_check_on(g, device, 1e-5, 2);
}

Tensor i64s(const Ints& v) {
  return Tensor::from_values(std::vector<double>(v.begin(), v.end()), {static_cast<int64_t>(v.size())}, DType::i64);
}

// x [B, S, D] -> Transpose(1, 0, 2) -> MatMul(W [D, 3D]) + bias -> q, k slices, each
// Reshape [S, B*H, Dh] -> Transpose(1, 0, 2); out = q + k. (The Shape nodes the export reads
// of the moved Transpose's output, which the move folds, are in the zoo's bert_encoder.)
ReferenceGraph in_projection(int64_t b, int64_t s, int64_t h, int64_t dh, const std::string& reader = "") {
  const int64_t d = h * dh;
  ReferenceGraph g;
  g.input("x", random_f32({b, s, d}));
  g.initializer("w", random_f32({d, 3 * d}, -0.3, 0.3));
  g.initializer("bias", random_f32({3 * d}));
  g.node("Transpose", {"x"}, "xt", {{"perm", Ints{1, 0, 2}}});
  g.node("MatMul", {"xt", "w"}, "prod");
  g.node("Add", {"prod", "bias"}, "qkv");
  std::string read = "qkv";
  if (reader == "Square") {  // a Mul, which nothing fuses into the product
    g.node("Mul", {"qkv", "qkv"}, "qkv_act");
    read = "qkv_act";
  }
  g.initializer("axes", i64s({2}));
  g.initializer("q0", i64s({0}));
  g.initializer("q1", i64s({d}));
  g.initializer("k1", i64s({2 * d}));
  g.node("Slice", {read, "q0", "q1", "axes"}, "q");
  g.node("Slice", {read, "q1", "k1", "axes"}, "k");
  g.initializer("heads", i64s({0, b * h, dh}));
  g.initializer("k_shape", i64s({s, b * h, dh}));
  g.node("Reshape", {"q", "heads"}, "q3");
  g.node("Reshape", {"k", "k_shape"}, "k3");
  g.node("Transpose", {"q3"}, "qh", {{"perm", Ints{1, 0, 2}}});
  g.node("Transpose", {"k3"}, "kh", {{"perm", Ints{1, 0, 2}}});
  g.node("Add", {"qh", "kh"}, "out");
  g.output("out");
  return g;
}

TEST(TransposeSinking, InProjectionTransposeMovesAfterTheProduct) {
  for (const Ints& dims : {Ints{2, 5, 3, 4}, Ints{3, 7, 2, 5}, Ints{1, 9, 4, 3}})
    for (Device device : usable_devices()) {
      SCOPED_TRACE(str("B ", dims[0], " S ", dims[1], " H ", dims[2], " Dh ", dims[3], " on ", device.str(),
                       ", seed ", seed()));
      ReferenceGraph g = in_projection(dims[0], dims[1], dims[2], dims[3]);
      if (device == Device::cpu()) run_against_reference(g, {"out"});
      std::vector<NodePlan> plan = checked_plan(g, device);
      if (!moves_checked(device)) continue;
      // ReferenceGraph names nodes by op and position: the first Transpose "Transpose_0". After
      // the move it is the
      // product's, and the head splits read the product straight.
      EXPECT_FALSE(in_plan(plan, "Transpose_0"));
      const NodePlan* moved = plan_of(plan, "Transpose_0/after_product");
      ASSERT_NE(moved, nullptr);
      EXPECT_NE(moved->reason.find("not run"), std::string::npos) << moved->reason;
    }
}

TEST(TransposeSinking, InProjectionKeepsItsTransposeBeforeOtherReaders) {
  for (Device device : usable_devices()) {
    SCOPED_TRACE(str(device.str(), ", seed ", seed()));
    ReferenceGraph g = in_projection(2, 5, 3, 4, "Square");
    std::vector<NodePlan> plan = checked_plan(g, device);
    if (!moves_checked(device)) continue;
    EXPECT_TRUE(in_plan(plan, "Transpose_0"));
    EXPECT_FALSE(in_plan(plan, "Transpose_0/after_product"));
  }
}

// attn [B*H, S, Dh] -> Transpose(1, 0, 2) -> Reshape [S*B, D] (Gemm) or [S, B, D] (MatMul) ->
// the product -> Reshape [S, B, N] -> Transpose(1, 0, 2) -> out [B, S, N].
struct OutProjection {
  std::string product = "Gemm";  // or "MatMul"
  int64_t b = 2, s = 5, h = 3, dh = 4, n = 7;
  bool trans_b = true;
  bool full_c = false;     // Gemm's C one row per row of A: the Transpose stays
  bool last_axis = false;  // the final Transpose moves the last axis: it stays
};

ReferenceGraph out_projection(const OutProjection& c) {
  const int64_t d = c.h * c.dh;
  ReferenceGraph g;
  g.input("attn", random_f32({c.b * c.h, c.s, c.dh}));
  g.node("Transpose", {"attn"}, "at", {{"perm", Ints{1, 0, 2}}});
  if (c.product == "Gemm") {
    g.initializer("rows_shape", i64s({c.s * c.b, d}));
    g.node("Reshape", {"at", "rows_shape"}, "a");
    g.initializer("w", random_f32(c.trans_b ? Shape{c.n, d} : Shape{d, c.n}, -0.3, 0.3));
    g.initializer("c", random_f32(c.full_c ? Shape{c.s * c.b, c.n} : Shape{c.n}));
    g.node("Gemm", {"a", "w", "c"}, "y", {{"transB", int64_t{c.trans_b ? 1 : 0}}, {"alpha", 0.75}});
  } else {
    g.initializer("rows_shape", i64s({c.s, c.b, d}));
    g.node("Reshape", {"at", "rows_shape"}, "a");
    g.initializer("w", random_f32({d, c.n}, -0.3, 0.3));
    g.node("MatMul", {"a", "w"}, "y");
  }
  g.initializer("y_shape", i64s({c.s, c.b, c.n}));
  g.node("Reshape", {"y", "y_shape"}, "y3");
  g.node("Transpose", {"y3"}, "out", {{"perm", c.last_axis ? Ints{1, 2, 0} : Ints{1, 0, 2}}});
  g.output("out");
  return g;
}

TEST(TransposeSinking, OutProjectionTransposeMovesOntoA) {
  std::vector<OutProjection> cases;
  cases.push_back({});
  cases.push_back({"Gemm", 3, 7, 2, 5, 9, false});
  cases.push_back({"MatMul", 2, 5, 3, 4, 7});
  cases.push_back({"MatMul", 1, 11, 4, 3, 5});
  for (const OutProjection& c : cases)
    for (Device device : usable_devices()) {
      SCOPED_TRACE(str(c.product, " B ", c.b, " S ", c.s, " H ", c.h, " Dh ", c.dh, " N ", c.n,
                       c.trans_b ? " transB" : "", " on ", device.str(), ", seed ", seed()));
      ReferenceGraph g = out_projection(c);
      if (device == Device::cpu()) run_against_reference(g, {"out"});
      std::vector<NodePlan> plan = checked_plan(g, device);
      if (!moves_checked(device)) continue;
      // The final Transpose (the graph's fifth node, "Transpose_4") is gone; the one now on A
      // joins the first in one strided copy.
      EXPECT_FALSE(in_plan(plan, "Transpose_4"));
      const NodePlan* moved = plan_of(plan, "Transpose_4/before_product");
      ASSERT_NE(moved, nullptr);
      EXPECT_NE(moved->reason.find("one strided copy"), std::string::npos) << moved->reason;
    }
}

TEST(TransposeSinking, OutProjectionKeepsItsTransposeWhereRowsDiffer) {
  OutProjection full_c;
  full_c.full_c = true;
  OutProjection last_axis;
  last_axis.last_axis = true;
  OutProjection matmul_last_axis;
  matmul_last_axis.product = "MatMul";
  matmul_last_axis.last_axis = true;
  for (const OutProjection& c : {full_c, last_axis, matmul_last_axis})
    for (Device device : usable_devices()) {
      SCOPED_TRACE(str(c.product, c.full_c ? ", C per row" : "", c.last_axis ? ", last axis moved" : "", " on ",
                       device.str(), ", seed ", seed()));
      ReferenceGraph g = out_projection(c);
      std::vector<NodePlan> plan = checked_plan(g, device);
      if (!moves_checked(device)) continue;
      EXPECT_TRUE(in_plan(plan, "Transpose_4"));
      EXPECT_FALSE(in_plan(plan, "Transpose_4/before_product"));
    }
}

// Permutations that are not their own inverse, over 4-D rows: x [2, 3, 4, 5] -> Transpose
// (1, 2, 0, 3) -> the product -> Transpose (2, 0, 1, 3), directly (the first moves after the
// product) and with Reshapes between (the second moves onto A).
TEST(TransposeSinking, CyclicPermutations) {
  for (bool reshapes : {false, true})
    for (Device device : usable_devices()) {
      SCOPED_TRACE(str(reshapes ? "through Reshapes" : "direct", " on ", device.str(), ", seed ", seed()));
      ReferenceGraph g;
      g.input("x", random_f32({2, 3, 4, 5}));
      g.initializer("w", random_f32({5, 6}));
      g.node("Transpose", {"x"}, "xt", {{"perm", Ints{1, 2, 0, 3}}});  // [3, 4, 2, 5]
      std::string a = "xt", y = "y";
      if (reshapes) {
        g.initializer("a_shape", i64s({12, 2, 5}));
        g.node("Reshape", {"xt", "a_shape"}, "a");
        a = "a";
      }
      g.node("MatMul", {a, "w"}, "y");
      if (reshapes) {
        g.initializer("y_shape", i64s({3, 4, 2, 6}));
        g.node("Reshape", {"y", "y_shape"}, "y4");
        y = "y4";
      }
      g.node("Transpose", {y}, "out", {{"perm", Ints{2, 0, 1, 3}}});
      g.output("out");
      if (device == Device::cpu()) run_against_reference(g, {"out"});
      std::vector<NodePlan> plan = checked_plan(g, device);
      if (!moves_checked(device)) continue;
      const std::string last = reshapes ? "Transpose_4" : "Transpose_2";
      EXPECT_NE(in_plan(plan, "Transpose_0/after_product"), reshapes);
      EXPECT_EQ(in_plan(plan, last + "/before_product"), reshapes);
    }
}

// Empty products (no tokens; K = 0) run as written, against the reference.
TEST(TransposeSinking, EmptyProductsRunAsWritten) {
  OutProjection no_tokens;
  no_tokens.s = 0;
  OutProjection no_matmul_tokens = no_tokens;
  no_matmul_tokens.product = "MatMul";
  for (const OutProjection& c : {no_tokens, no_matmul_tokens})
    for (Device device : usable_devices()) {
      SCOPED_TRACE(str(c.product, " with no tokens on ", device.str()));
      checked_plan(out_projection(c), device);
    }
  for (Device device : usable_devices()) {
    SCOPED_TRACE(str("in-projection with no tokens on ", device.str()));
    checked_plan(in_projection(2, 0, 3, 4), device);
  }
}

// The product's output is also a graph output: both Transposes stay where they are.
TEST(TransposeSinking, ProductReadTwiceStays) {
  for (Device device : usable_devices()) {
    SCOPED_TRACE(str(device.str(), ", seed ", seed()));
    ReferenceGraph g;
    g.input("attn", random_f32({6, 5, 4}));
    g.node("Transpose", {"attn"}, "at", {{"perm", Ints{1, 0, 2}}});
    g.initializer("w", random_f32({4, 3}));
    g.node("MatMul", {"at", "w"}, "y");
    g.node("Transpose", {"y"}, "out", {{"perm", Ints{1, 0, 2}}});
    g.node("Relu", {"y"}, "y_relu");
    g.output("out");
    g.output("y_relu");
    std::vector<NodePlan> plan = checked_plan(g, device);
    if (!moves_checked(device)) continue;
    EXPECT_TRUE(in_plan(plan, "Transpose_0"));
    EXPECT_TRUE(in_plan(plan, "Transpose_2"));
  }
}

}  // namespace
}  // namespace porta::test
