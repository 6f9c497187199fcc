// Attention reading its q, k and v head splits where they lie (Compiler::read_chains_in_place
// and KernelDef::reads_view; the fused op's [B, H, S, D] from PyTorch's head split,
// runtime/attention_fusion.cpp), with fresh random values, against the float64 reference of
// the graph as written on every usable device; where the device's attention kernel reads
// strided views (vulkan:0's "rows" on a CPU-like device), whether the three head splits ran
// as copies. Graphs: nn.MultiheadAttention's export (batch_first = False) over a packed
// projection [S, B, lead + 3E + tail], batch sizes 1 to 3, head sizes 4 to 16, masks over
// [B*H, 1, S] and [B*H, S, S]; Hugging Face's form, one Transpose per separate projection.
// The copies stay where the projection's rows or the splits start between texels, or the
// kernel declines the head size (6). The head merge after attention (Transpose(1, 0, 2) and
// the output projection) is written in place by the attention, except where the merge is a
// graph output or the attention's result has another reader.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

Tensor i64s(const Ints& v) {
  return Tensor::from_values(std::vector<double>(v.begin(), v.end()), {static_cast<int64_t>(v.size())}, DType::i64);
}

struct Case {
  int64_t b = 2, s = 5, h = 3, dh = 4;
  int64_t lead = 0;      // columns of the packed projection before q
  std::string mask;      // "", "keys" ([B*H, 1, S]) or "full" ([B*H, S, S])
  int64_t tail = 0;      // and after v
  // "": the attention's result is the output; "projected": merged back to [S, B, E] and
  // projected (Transpose(1, 0, 2), Reshape, MatMul); "merged": the merge is the output; "read":
  // projected, and the attention's result also read by an Add.
  std::string merge;
};

// x [S, B, E] -> MatMul(W [E, lead + 3E]) + bias -> q, k, v Slices -> Reshape [S, B*H, Dh] ->
// q Transpose(1, 0, 2) / sqrt(Dh), k Transpose(1, 2, 0), v Transpose(1, 0, 2) -> scores (+ mask)
// -> Softmax -> P V: out [B*H, S, Dh].
ReferenceGraph packed_mha(const Case& c) {
  const int64_t e = c.h * c.dh, width = c.lead + 3 * e + c.tail;
  ReferenceGraph g;
  g.input("x", random_f32({c.s, c.b, e}));
  g.initializer("w", random_f32({e, width}, -0.3, 0.3));
  g.initializer("bias", random_f32({width}));
  g.node("MatMul", {"x", "w"}, "prod");
  g.node("Add", {"prod", "bias"}, "qkv");
  g.initializer("axes", i64s({2}));
  g.initializer("q0", i64s({c.lead}));
  g.initializer("k0", i64s({c.lead + e}));
  g.initializer("v0", i64s({c.lead + 2 * e}));
  g.initializer("v1", i64s({c.lead + 3 * e}));
  g.node("Slice", {"qkv", "q0", "k0", "axes"}, "q");
  g.node("Slice", {"qkv", "k0", "v0", "axes"}, "k");
  g.node("Slice", {"qkv", "v0", "v1", "axes"}, "v");
  g.initializer("heads", i64s({c.s, c.b * c.h, c.dh}));
  for (const char* x : {"q", "k", "v"}) g.node("Reshape", {x, "heads"}, std::string(x) + "3");
  g.node("Transpose", {"q3"}, "qt", {{"perm", Ints{1, 0, 2}}});
  g.initializer("root_d", Tensor::from_values({std::sqrt(static_cast<double>(c.dh))}, {}, DType::f32));
  g.node("Div", {"qt", "root_d"}, "qs");
  g.node("Transpose", {"k3"}, "kt", {{"perm", Ints{1, 2, 0}}});
  g.node("Transpose", {"v3"}, "vt", {{"perm", Ints{1, 0, 2}}});
  g.node("MatMul", {"qs", "kt"}, "scores");
  std::string logits = "scores";
  if (!c.mask.empty()) {
    Tensor mask = random_f32({c.b * c.h, c.mask == "full" ? c.s : 1, c.s});
    mask.data<float>()[0] = -std::numeric_limits<float>::infinity();  // one hidden key
    g.input("mask", mask);
    g.node("Add", {"scores", "mask"}, "masked");
    logits = "masked";
  }
  g.node("Softmax", {logits}, "p", {{"axis", int64_t{-1}}});
  if (c.merge.empty()) {
    g.node("MatMul", {"p", "vt"}, "out");
    g.output("out");
    return g;
  }
  g.node("MatMul", {"p", "vt"}, "attn");
  g.node("Transpose", {"attn"}, c.merge == "merged" ? "out" : "merged", {{"perm", Ints{1, 0, 2}}});
  if (c.merge == "merged") {
    g.output("out");
    return g;
  }
  g.initializer("rows", i64s({c.s, c.b, e}));
  g.node("Reshape", {"merged", "rows"}, "rows_in");
  g.initializer("wo", random_f32({e, e}, -0.3, 0.3));
  g.node("MatMul", {"rows_in", "wo"}, c.merge == "read" ? "projected" : "out");
  if (c.merge == "read") {
    g.initializer("back", i64s({c.s, c.b, e}));
    g.node("Transpose", {"attn"}, "attn_t", {{"perm", Ints{1, 0, 2}}});
    g.node("Reshape", {"attn_t", "back"}, "attn_rows");
    g.node("Add", {"projected", "attn_rows"}, "out");
  }
  g.output("out");
  return g;
}

// Hugging Face's form: x [B, S, E] -> one MatMul per projection -> Reshape [B, S, H, Dh] ->
// Transpose(0, 2, 1, 3), each head split a chain of one copy; K^T = Transpose(0, 1, 3, 2) of
// k; scores / sqrt(Dh) -> Softmax -> P V: out [B, H, S, Dh].
ReferenceGraph separate_projections(int64_t b, int64_t s, int64_t h, int64_t dh) {
  const int64_t e = h * dh;
  ReferenceGraph g;
  g.input("x", random_f32({b, s, e}));
  g.initializer("heads", i64s({b, s, h, dh}));
  for (const std::string x : {"q", "k", "v"}) {
    g.initializer("w" + x, random_f32({e, e}, -0.3, 0.3));
    g.node("MatMul", {"x", "w" + x}, x + "p");
    g.node("Reshape", {x + "p", "heads"}, x + "4");
    g.node("Transpose", {x + "4"}, x + "h", {{"perm", Ints{0, 2, 1, 3}}});
  }
  g.node("Transpose", {"kh"}, "kt", {{"perm", Ints{0, 1, 3, 2}}});
  g.node("MatMul", {"qh", "kt"}, "scores");
  g.initializer("root_d", Tensor::from_values({std::sqrt(static_cast<double>(dh))}, {}, DType::f32));
  g.node("Div", {"scores", "root_d"}, "scaled");
  g.node("Softmax", {"scaled"}, "p", {{"axis", int64_t{-1}}});
  g.node("MatMul", {"p", "vh"}, "out");
  g.output("out");
  return g;
}

int in_place_splits(const std::vector<NodePlan>& plan) {
  int n = 0;
  for (const NodePlan& p : plan) n += p.reason.find("its readers read its input where it lies") != std::string::npos;
  return n;
}

// The plan's fused attention, or null.
const NodePlan* fused(const std::vector<NodePlan>& plan) {
  for (const NodePlan& p : plan)
    if (p.op == "ai.porta::ScaledDotProductAttention") return &p;
  return nullptr;
}

int written_in_place(const std::vector<NodePlan>& plan) {
  int n = 0;
  for (const NodePlan& p : plan) n += p.reason.find("its input's producer writes it here in place") != std::string::npos;
  return n;
}

// Whether the fused node runs a kernel that reads strided views (vulkan's "rows").
bool reads_views(const NodePlan* node, Device device) {
  if (!node || device_type_name(device.type) != "vulkan" || node->reason.find("kernel 'rows' for") == std::string::npos)
    return false;
  for (const KernelDef* k : kernels_for("ai.porta::ScaledDotProductAttention"))
    if (k->backend == device.type && k->impl.name == "rows") return static_cast<bool>(k->reads_view);
  return false;
}

void expect_case(const Case& c, Device device, int splits_in_place) {
  SCOPED_TRACE(str("B ", c.b, " S ", c.s, " H ", c.h, " Dh ", c.dh, " lead ", c.lead, " mask '", c.mask, "' on ",
                   device.str(), ", seed ", seed()));
  ReferenceGraph g = packed_mha(c);
  const std::vector<NodePlan> plan = plan_and_check_on(g, device, 1e-5, 2);
  if (!reads_views(fused(plan), device)) {
    EXPECT_EQ(in_place_splits(plan), 0);
    return;
  }
  EXPECT_EQ(in_place_splits(plan), splits_in_place);
}

TEST(AttentionViews, HeadSplitsReadInPlace) {
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    for (Case c : {Case{2, 5, 3, 4}, Case{1, 9, 4, 8}, Case{3, 7, 2, 16}, Case{2, 17, 3, 4, 0, "keys"},
                   Case{2, 6, 2, 8, 0, "full"}, Case{2, 5, 3, 4, 4}})
      expect_case(c, device, 3);
  }
}

// The head merge after attention: written in place by the attention where it feeds the output
// projection; kept where it is a graph output or where the attention's result is read twice.
TEST(AttentionViews, HeadMergeWrittenInPlace) {
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    for (const Case& c : {Case{2, 5, 3, 4, 0, "", 0, "projected"}, Case{1, 9, 4, 8, 0, "keys", 0, "projected"},
                          Case{3, 7, 2, 16, 0, "", 0, "merged"}, Case{2, 6, 2, 8, 0, "", 0, "read"},
                          Case{2, 5, 3, 6, 0, "", 0, "projected"}}) {
      SCOPED_TRACE(str("B ", c.b, " S ", c.s, " H ", c.h, " Dh ", c.dh, " merge '", c.merge, "' on ", device.str(),
                       ", seed ", seed()));
      ReferenceGraph g = packed_mha(c);
      const std::vector<NodePlan> plan = plan_and_check_on(g, device, 1e-5, 2);
      const bool writes = reads_views(fused(plan), device) && c.merge == "projected";
      EXPECT_EQ(written_in_place(plan), writes ? 1 : 0);
    }
  }
}

TEST(AttentionViews, OneCopySplitsReadInPlace) {
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    for (const Ints& d : {Ints{2, 5, 3, 4}, Ints{1, 7, 2, 8}, Ints{3, 4, 4, 12}}) {
      SCOPED_TRACE(str("B ", d[0], " S ", d[1], " H ", d[2], " Dh ", d[3], " on ", device.str(), ", seed ", seed()));
      ReferenceGraph g = separate_projections(d[0], d[1], d[2], d[3]);
      const std::vector<NodePlan> plan = plan_and_check_on(g, device, 1e-5, 2);
      EXPECT_EQ(in_place_splits(plan), reads_views(fused(plan), device) ? 3 : 0);
    }
  }
}

TEST(AttentionViews, CopiesStayWhereTheKernelCannotReadTheView) {
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    expect_case(Case{2, 5, 3, 4, 2}, device, 0);          // rows of the projection between texels
    expect_case(Case{2, 5, 3, 4, 2, "", 2}, device, 0);   // whole rows, the splits between texels
    expect_case(Case{2, 5, 3, 6}, device, 0);             // rows of 6: not whole texels
    expect_case(Case{2, 5, 3, 4, 2, "keys"}, device, 0);  // and with a mask
  }
}

}  // namespace
}  // namespace porta::test
