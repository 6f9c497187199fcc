// Chains of data-movement nodes run as one strided copy (runtime/session_moves.cpp): the last
// copy of a chain of Slice / Transpose / reshape-like nodes reads its first input through one
// view (ai.porta::StridedCopy), and the copies before it run only where something else reads
// them. Against references computed here (by index, or through the tensor views of the cpu),
// on every device this build runs, with what the plan reports.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "porta/session.hpp"
#include "tests/onnx_graph_builder.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

void ints_initializer(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& v) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

void ints_attr(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

// Steps that ran, by op, from a profiled session's last run.
std::map<std::string, int> ran(const Session& s) {
  std::map<std::string, int> n;
  for (const NodeProfile& p : s.profile()) ++n[p.op];
  return n;
}

// Steps of `op` that ran (a map from ran()).
int ran_of(const std::map<std::string, int>& n, const char* op) { return n.count(op) ? n.at(op) : 0; }

// A Split named "split" of input "x" along `axis` into `outputs`, sized by the initializer "split".
void add_split(OnnxGraph& g, const std::vector<int64_t>& sizes, int64_t axis, const std::vector<std::string>& outputs) {
  ints_initializer(g.g, "split", sizes);
  onnx::NodeProto* sp = g.node("Split", {"x", "split"}, outputs[0]);
  for (size_t i = 1; i < outputs.size(); ++i) sp->add_output(outputs[i]);
  sp->set_name("split");
  int_attr(sp, "axis", axis);
}

// Runs `s` once; each output must equal its reference exactly.
void expect_outputs(Session& s, const std::map<std::string, Tensor>& in, const std::vector<Tensor>& refs) {
  std::vector<Tensor> out = s.run(in);
  ASSERT_EQ(out.size(), refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    Comparison c = compare(out[i], refs[i], 0);
    EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
  }
}

// Attention's head split as PyTorch exports it: the k block of a [S, B, 3*E] projection,
// Slice -> Reshape [S, B*H, Dh] -> Transpose [B*H, S, Dh] -> Reshape [B, H, S, Dh]. The merge
// of B and H in the first Reshape is no single stride; the chain as a whole is a view.
TEST(PlanMoves, AttentionHeadSplitIsOneCopy) {
  const int64_t S = 5, B = 3, H = 4, Dh = 6, E = H * Dh;
  OnnxGraph g;
  g.input("x", {S, B, 3 * E});
  ints_initializer(g.g, "starts", {E});
  ints_initializer(g.g, "ends", {2 * E});
  ints_initializer(g.g, "axes", {2});
  ints_initializer(g.g, "heads", {S, B * H, Dh});
  ints_initializer(g.g, "bhsd", {B, H, S, Dh});
  g.node("Slice", {"x", "starts", "ends", "axes"}, "k")->set_name("slice");
  g.node("Reshape", {"k", "heads"}, "kh")->set_name("reshape");
  onnx::NodeProto* t = g.node("Transpose", {"kh"}, "kt");
  t->set_name("transpose");
  ints_attr(t, "perm", {1, 0, 2});
  g.node("Reshape", {"kt", "bhsd"}, "out")->set_name("reshape_out");
  g.output("out", {B, H, S, Dh});
  const Tensor x = random_f32({S, B, 3 * E});
  const std::vector<double> xs = x.to_doubles();
  std::vector<double> want;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < Dh; ++d) want.push_back(xs[static_cast<size_t>((s * B + b) * 3 * E + E + h * Dh + d)]);
  const Tensor ref = Tensor::from_values(want, {B, H, S, Dh}, DType::f64);
  const std::map<std::string, Tensor> in{{"x", x}};
  for (Device dev : test_devices()) {
    if (!device_unusable(dev).empty()) continue;
    SCOPED_TRACE(dev.str());
    SessionOptions o;
    o.device = dev;
    o.profile = true;
    Session s(g.model(), o);
    const std::vector<NodePlan> plan = s.plan(in);
    EXPECT_NE(plan_of_node(plan, "transpose").reason.find("one strided copy"), std::string::npos)
        << plan_of_node(plan, "transpose").reason;
    EXPECT_NE(plan_of_node(plan, "slice").reason.find("not run"), std::string::npos) << plan_of_node(plan, "slice").reason;
    Comparison c = compare(s.run(in).at(0), ref, 0);
    EXPECT_TRUE(c.ok) << c.message;
    const std::map<std::string, int> n = ran(s);
    EXPECT_EQ(n.count("Slice"), 0u);
    EXPECT_EQ(n.count("Transpose"), 0u);
    EXPECT_EQ(n.count("StridedCopy") ? n.at("StridedCopy") : 0, 1);
    // keep_values reports every value: nothing merges there.
    o.keep_values = true;
    Session kept(g.model(), o);
    c = compare(kept.run(in).at(0), ref, 0);
    EXPECT_TRUE(c.ok) << c.message;
    EXPECT_EQ(kept.values().count("k"), 1u);
  }
}

// A backwards Slice (step -2) whose result is also a graph output, then two Transposes that
// compose to the identity, read by a Relu as well: the Slice still runs (its output is
// needed), the second Transpose reads x through one view, the first runs for the Relu.
TEST(PlanMoves, IntermediatesSomethingElseReadsStillRun) {
  OnnxGraph g;
  g.input("x", {5, 6, 7});
  ints_initializer(g.g, "starts", {5});
  ints_initializer(g.g, "ends", {-100});
  ints_initializer(g.g, "axes", {1});
  ints_initializer(g.g, "steps", {-2});
  g.node("Slice", {"x", "starts", "ends", "axes", "steps"}, "rev")->set_name("slice");
  onnx::NodeProto* t1 = g.node("Transpose", {"rev"}, "t1");
  t1->set_name("t1");
  ints_attr(t1, "perm", {2, 0, 1});
  onnx::NodeProto* t2 = g.node("Transpose", {"t1"}, "t2");
  t2->set_name("t2");
  ints_attr(t2, "perm", {1, 2, 0});
  g.node("Relu", {"t1"}, "r");
  g.output("t2", {5, 3, 7});
  g.output("rev", {5, 3, 7});
  g.output("r", {7, 5, 3});
  const Tensor x = random_f32({5, 6, 7});
  const std::vector<double> xs = x.to_doubles();
  std::vector<double> rev, relu(7 * 5 * 3);
  for (int64_t a = 0; a < 5; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 7; ++c) {
        const double v = xs[static_cast<size_t>((a * 6 + (5 - 2 * b)) * 7 + c)];
        rev.push_back(v);
        relu[static_cast<size_t>((c * 5 + a) * 3 + b)] = v > 0 ? v : 0;
      }
  const Tensor ref_rev = Tensor::from_values(rev, {5, 3, 7}, DType::f64);
  const Tensor ref_relu = Tensor::from_values(relu, {7, 5, 3}, DType::f64);
  const std::map<std::string, Tensor> in{{"x", x}};
  for (Device dev : test_devices()) {
    if (!device_unusable(dev).empty()) continue;
    SCOPED_TRACE(dev.str());
    SessionOptions o;
    o.device = dev;
    o.profile = true;
    Session s(g.model(), o);
    const std::vector<NodePlan> plan = s.plan(in);
    EXPECT_NE(plan_of_node(plan, "t2").reason.find("one strided copy"), std::string::npos) << plan_of_node(plan, "t2").reason;
    EXPECT_EQ(plan_of_node(plan, "t1").reason.find("not run"), std::string::npos) << plan_of_node(plan, "t1").reason;
    std::vector<Tensor> out = s.run(in);
    for (auto [i, ref] : {std::pair<size_t, const Tensor*>{0, &ref_rev}, {1, &ref_rev}, {2, &ref_relu}}) {
      Comparison c = compare(out.at(i), *ref, 0);
      EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message;
    }
  }
}

// LLaMA's packed projection: a [S, B, 3*E] value split in three along its last axis, each part
// then split into heads (Reshape [S, B*H, Dh], Transpose [B*H, S, Dh]). Each part is a block of
// the projection, so each chain is one view of it: three strided copies run, the Split and the
// Transposes do not.
TEST(PlanMoves, SplitOutputsStartChains) {
  const int64_t S = 5, B = 2, H = 3, Dh = 4, E = H * Dh;
  OnnxGraph g;
  g.input("x", {S, B, 3 * E});
  add_split(g, {E, E, E}, 2, {"q", "k", "v"});
  ints_initializer(g.g, "heads", {S, B * H, Dh});
  const char* parts[] = {"q", "k", "v"};
  for (const char* p : parts) {
    g.node("Reshape", {p, "heads"}, str(p, "h"));
    onnx::NodeProto* t = g.node("Transpose", {str(p, "h")}, str(p, "t"));
    t->set_name(str("transpose_", p));
    ints_attr(t, "perm", {1, 0, 2});
    g.output(str(p, "t"), {B * H, S, Dh});
  }
  const Tensor x = random_f32({S, B, 3 * E});
  const std::vector<double> xs = x.to_doubles();
  std::vector<Tensor> refs;
  for (int64_t part = 0; part < 3; ++part) {
    std::vector<double> want;
    for (int64_t bh = 0; bh < B * H; ++bh)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t d = 0; d < Dh; ++d)
          want.push_back(xs[static_cast<size_t>((s * B + bh / H) * 3 * E + part * E + bh % H * Dh + d)]);
    refs.push_back(Tensor::from_values(want, {B * H, S, Dh}, DType::f64));
  }
  const std::map<std::string, Tensor> in{{"x", x}};
  for (Device dev : test_devices()) {
    if (!device_unusable(dev).empty()) continue;
    SCOPED_TRACE(dev.str());
    SessionOptions o;
    o.device = dev;
    o.profile = true;
    Session s(g.model(), o);
    const std::vector<NodePlan> plan = s.plan(in);
    EXPECT_NE(plan_of_node(plan, "split").reason.find("not run"), std::string::npos) << plan_of_node(plan, "split").reason;
    expect_outputs(s, in, refs);
    const std::map<std::string, int> n = ran(s);
    EXPECT_EQ(ran_of(n, "Split"), 0);
    EXPECT_EQ(ran_of(n, "Transpose"), 0);
    EXPECT_EQ(ran_of(n, "StridedCopy"), 3);
  }
}

// Unequal parts along a middle axis: one part read by a Relu (so the Split still runs), one
// through a Transpose, one through two Transposes. Every output against the reference.
TEST(PlanMoves, SplitStillRunsWhereAPartIsReadAsItIs) {
  OnnxGraph g;
  g.input("x", {4, 12, 6});
  add_split(g, {3, 5, 4}, -2, {"a", "b", "c"});
  onnx::NodeProto* ta = g.node("Transpose", {"a"}, "at");
  ints_attr(ta, "perm", {2, 0, 1});
  g.node("Relu", {"b"}, "br");
  onnx::NodeProto* tc1 = g.node("Transpose", {"c"}, "c1");
  ints_attr(tc1, "perm", {1, 2, 0});
  onnx::NodeProto* tc2 = g.node("Transpose", {"c1"}, "c2");
  ints_attr(tc2, "perm", {0, 2, 1});
  g.output("at", {6, 4, 3});
  g.output("br", {4, 5, 6});
  g.output("c2", {4, 4, 6});
  const Tensor x = random_f32({4, 12, 6});
  const std::vector<double> xs = x.to_doubles();
  auto at = [&](int64_t i, int64_t j, int64_t k) { return xs[static_cast<size_t>((i * 12 + j) * 6 + k)]; };
  std::vector<double> a, b, c;
  for (int64_t k = 0; k < 6; ++k)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 3; ++j) a.push_back(at(i, j, k));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k = 0; k < 6; ++k) b.push_back(std::max(0.0, at(i, 3 + j, k)));
  // c1 = c permuted (1, 2, 0): [4 (j), 6 (k), 4 (i)]; c2 = c1 permuted (0, 2, 1): [j, i, k].
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t k = 0; k < 6; ++k) c.push_back(at(i, 8 + j, k));
  const std::vector<Tensor> refs = {Tensor::from_values(a, {6, 4, 3}, DType::f64),
                                    Tensor::from_values(b, {4, 5, 6}, DType::f64),
                                    Tensor::from_values(c, {4, 4, 6}, DType::f64)};
  const std::map<std::string, Tensor> in{{"x", x}};
  for (Device dev : test_devices()) {
    if (!device_unusable(dev).empty()) continue;
    SCOPED_TRACE(dev.str());
    SessionOptions o;
    o.device = dev;
    o.profile = true;
    Session s(g.model(), o);
    expect_outputs(s, in, refs);
    const std::map<std::string, int> n = ran(s);
    EXPECT_EQ(ran_of(n, "Split"), 1);
    EXPECT_EQ(ran_of(n, "Transpose"), 0);
    EXPECT_EQ(ran_of(n, "StridedCopy"), 2);
  }
}

// An empty part (split sizes 4, 0, 8): its chain is an empty view, every part still right.
TEST(PlanMoves, SplitWithAnEmptyPart) {
  OnnxGraph g;
  g.input("x", {3, 12, 5});
  add_split(g, {4, 0, 8}, 1, {"p0", "p1", "p2"});
  const int64_t sizes[] = {4, 0, 8}, starts[] = {0, 4, 4};
  for (int i = 0; i < 3; ++i) {
    onnx::NodeProto* t = g.node("Transpose", {str("p", i)}, str("t", i));
    ints_attr(t, "perm", {2, 0, 1});
    g.output(str("t", i), {5, 3, sizes[i]});
  }
  const Tensor x = random_f32({3, 12, 5});
  const std::vector<double> xs = x.to_doubles();
  std::vector<Tensor> refs;
  for (int i = 0; i < 3; ++i) {
    std::vector<double> want;
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t a = 0; a < 3; ++a)
        for (int64_t b = 0; b < sizes[i]; ++b) want.push_back(xs[static_cast<size_t>((a * 12 + starts[i] + b) * 5 + c)]);
    refs.push_back(Tensor::from_values(want, {5, 3, sizes[i]}, DType::f64));
  }
  const std::map<std::string, Tensor> in{{"x", x}};
  for (Device dev : test_devices()) {
    if (!device_unusable(dev).empty()) continue;
    SCOPED_TRACE(dev.str());
    SessionOptions o;
    o.device = dev;
    Session s(g.model(), o);
    expect_outputs(s, in, refs);
  }
}

// Random chains of Transpose, Slice (steps 1 and 2, empty results included) and Reshape
// (merging neighbours, splitting by a divisor), each compared with the same chain through the
// cpu's tensor views (Tensor::permute / slice / reshape, copied out by contiguous()).
TEST(PlanMoves, RandomChainsMatchTheTensorViews) {
  std::mt19937 rng(20261204);
  auto pick = [&](int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng); };
  int merged = 0;
  for (int trial = 0; trial < 24; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    Shape shape{2 + pick(4), 1 + pick(5), 2 + pick(6)};
    const Tensor x = random_f32(shape);
    Tensor expect = x;
    OnnxGraph g;
    g.input("x", shape);
    std::string cur = "x";
    const int steps = 2 + static_cast<int>(pick(4));
    for (int k = 0; k < steps; ++k) {
      const std::string next = "v" + std::to_string(k);
      const int64_t rank = static_cast<int64_t>(shape.size());
      const int kind = static_cast<int>(pick(3));
      if (kind == 0) {  // Transpose
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng);
        ints_attr(g.node("Transpose", {cur}, next), "perm", perm);
        expect = expect.permute(std::vector<int>(perm.begin(), perm.end()));
        Shape s2;
        for (int64_t p : perm) s2.push_back(shape[static_cast<size_t>(p)]);
        shape = s2;
      } else if (kind == 1) {  // Slice
        const int64_t axis = pick(rank), n = shape[static_cast<size_t>(axis)];
        const int64_t start = pick(n), step = 1 + pick(2), end = start + pick(n - start + 1);
        const std::string p = next + "_";
        ints_initializer(g.g, p + "s", {start});
        ints_initializer(g.g, p + "e", {end});
        ints_initializer(g.g, p + "a", {axis});
        ints_initializer(g.g, p + "t", {step});
        g.node("Slice", {cur, p + "s", p + "e", p + "a", p + "t"}, next);
        expect = expect.slice(static_cast<int>(axis), start, end, step);
        shape[static_cast<size_t>(axis)] = (end - start + step - 1) / step;
      } else {  // Reshape: merge two neighbours, or split an axis by a divisor
        Shape s2 = shape;
        const int64_t axis = pick(rank);
        const int64_t n = s2[static_cast<size_t>(axis)];
        int64_t d = 1;
        for (int64_t c = 2; c < n; ++c)
          if (n % c == 0) d = c;
        if (d > 1 && (pick(2) == 0 || rank < 2)) {
          s2[static_cast<size_t>(axis)] = n / d;
          s2.insert(s2.begin() + axis + 1, d);
        } else if (rank >= 2) {
          const size_t a = static_cast<size_t>(std::min<int64_t>(axis, rank - 2));
          s2[a] *= s2[a + 1];
          s2.erase(s2.begin() + static_cast<int64_t>(a) + 1);
        }
        ints_initializer(g.g, next + "_shape", std::vector<int64_t>(s2.begin(), s2.end()));
        onnx::AttributeProto* zero = g.node("Reshape", {cur, next + "_shape"}, next)->add_attribute();
        zero->set_name("allowzero");  // a 0 in the shape is a size, not "as the input"
        zero->set_type(onnx::AttributeProto::INT);
        zero->set_i(1);
        expect = expect.contiguous().reshape(s2);
        shape = s2;
      }
      cur = next;
    }
    g.output(cur, shape);
    const Tensor ref = expect.contiguous();
    const std::map<std::string, Tensor> in{{"x", x}};
    for (Device dev : test_devices()) {
      if (!device_unusable(dev).empty()) continue;
      SCOPED_TRACE(dev.str());
      SessionOptions o;
      o.device = dev;
      o.profile = true;
      Session s(g.model(), o);
      Comparison c = compare(s.run(in).at(0), ref, 0);
      EXPECT_TRUE(c.ok) << c.message;
      if (dev.type == DeviceType::cpu) merged += ran(s).count("StridedCopy") ? 1 : 0;
    }
  }
  EXPECT_GT(merged, 4) << "few random chains merged: the test no longer exercises the pass";
}

// A bad StridedCopy in a model (a view reaching past its input) is an error naming the
// elements it would read, not a read out of bounds.
TEST(PlanMoves, StridedCopyOutsideItsInputIsAShapeError) {
  OnnxGraph g(17, {}, "ai.porta");
  g.input("x", {4, 3});
  onnx::NodeProto* n = g.node("StridedCopy", {"x"}, "y");
  n->set_domain("ai.porta");
  ints_attr(n, "shape", {3, 4});
  ints_attr(n, "strides", {1, 4});
  g.output("y", {3, 4});
  try {
    Session s(g.model(), SessionOptions{});
    s.run({{"x", random_f32({4, 3})}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reads elements 0 to 14 of X, which has 12"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace porta::test
