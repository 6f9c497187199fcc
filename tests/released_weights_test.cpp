// Weights a session's kernels hold packed (KernelContext::held) have their own bytes freed
// (Storage::release) and rebuilt on the next read: a session then keeps one copy of a MatMul's
// or Gemm's weights, not the model's plus the packed one. Checked: results against the float64
// reference on the first run and after, the bytes read back exactly as the model had them
// (and the model still running after that), and every case that must keep them: another live
// session of the model, keep_values, a reader that does not hold them (the gemv loop, an Add),
// a weight that is also a graph output. The Storage's own release and rebuild, and what it
// refuses. And the other half of a session's memory between runs: a graph output is written
// into the caller's last one once the caller has let go of it, never while it holds it.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "runtime/graph.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// The constant `name` of the model's graph (an initializer).
const Tensor& weight(const Model& m, const std::string& name) {
  const int v = m.graph().find(name);
  EXPECT_GE(v, 0) << name;
  return m.graph().values.at(v).constant;
}

// x [rows, k] -> MatMul(x, w [k, n]) -> Relu -> MatMul(., w2 [n, 256]) -> out: both products
// with more rows than the gemv loop takes, on an implementation that packs their weights for
// the session (the panels up to their rows, oneDNN's GEMM past them).
ReferenceGraph two_linears(int64_t rows, int64_t k, int64_t n) {
  ReferenceGraph g;
  g.input("x", random_f32({rows, k}), "rows");
  g.initializer("w", random_f32({k, n}, -0.2, 0.2));
  g.initializer("w2", random_f32({n, 256}, -0.2, 0.2));
  g.node("MatMul", {"x", "w"}, "h");
  g.node("Relu", {"h"}, "r");
  g.node("MatMul", {"r", "w2"}, "out");
  g.output("out");
  return g;
}

void expect_matches(const ReferenceGraph& g, const std::vector<Tensor>& out, const char* what) {
  Comparison c = compare(out.at(0), g.reference("out"), 1e-5);
  EXPECT_TRUE(c.ok) << what << ": " << c.message;
}

std::vector<float> values_of(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.raw_data(), t.nbytes());
  return v;
}

TEST(ReleasedWeights, PackedMatMulWeightsAreFreedAndReadBackExactly) {
  SCOPED_TRACE(str("seed ", seed()));
  ReferenceGraph g = two_linears(16, 256, 160);
  Model model = g.model();
  const std::vector<float> w_before = values_of(weight(model, "w"));
  Session session(model);
  expect_matches(g, session.run(g.inputs()), "first run");
  EXPECT_TRUE(weight(model, "w").storage()->released());
  EXPECT_TRUE(weight(model, "w2").storage()->released());
  expect_matches(g, session.run(g.inputs()), "second run, weights released");
  // Reading the weight brings its bytes back, exactly the model's.
  EXPECT_EQ(values_of(weight(model, "w")), w_before);
  EXPECT_FALSE(weight(model, "w").storage()->released());
  expect_matches(g, session.run(g.inputs()), "after the read");
}

TEST(ReleasedWeights, ANewPlanAndAnotherDeviceReadThemBack) {
  SCOPED_TRACE(str("seed ", seed()));
  ReferenceGraph g = two_linears(16, 256, 160);
  Model model = g.model();
  {
    Session session(model);
    expect_matches(g, session.run(g.inputs()), "first run");
    ASSERT_TRUE(weight(model, "w").storage()->released());
    // Other input shapes: a new plan whose kernels pack from the (rebuilt) weights; against a
    // session of a model of its own, which never released anything.
    Tensor x = random_f32({40, 256});
    std::vector<Tensor> out = session.run({{"x", x}});
    Tensor expect = Session(g.model()).run({{"x", x}}).at(0);
    Comparison c = compare(out.at(0), expect.cast(DType::f64), 1e-6);
    EXPECT_TRUE(c.ok) << "new plan: " << c.message;
    expect_matches(g, session.run(g.inputs()), "the first plan again");
  }
  // The session is gone; its packed copies rebuild the weights for whoever reads them next.
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    SessionOptions o;
    o.device = d;
    Session s2(model, o);
    expect_matches(g, s2.run(g.inputs()), "a later session");
  }
}

TEST(ReleasedWeights, KeptWhereTheyMustBe) {
  SCOPED_TRACE(str("seed ", seed()));
  {  // two live sessions of one model: neither frees what the other may be reading
    ReferenceGraph g = two_linears(16, 256, 160);
    Model model = g.model();
    Session a(model), b(model);
    expect_matches(g, a.run(g.inputs()), "a");
    expect_matches(g, b.run(g.inputs()), "b");
    EXPECT_FALSE(weight(model, "w").storage()->released());
  }
  {  // keep_values: the session reports its values
    ReferenceGraph g = two_linears(16, 256, 160);
    Model model = g.model();
    SessionOptions o;
    o.keep_values = true;
    Session s(model, o);
    expect_matches(g, s.run(g.inputs()), "keep_values");
    EXPECT_FALSE(weight(model, "w").storage()->released());
  }
  {  // a reader that does not hold it: the gemv loop, which streams the weight as stored
    DisabledKernels gemv_only("cpu:MatMul:panels");
    ReferenceGraph g = two_linears(1, 300, 700);
    Model model = g.model();
    Session s(model);
    expect_matches(g, s.run(g.inputs()), "gemv");
    EXPECT_FALSE(weight(model, "w").storage()->released());
  }
  {  // the weight also read by an Add, and a weight that is a graph output
    ReferenceGraph g;
    g.input("x", random_f32({64, 64}));
    g.initializer("w", random_f32({64, 64}, -0.2, 0.2));
    g.initializer("v", random_f32({64, 32}, -0.2, 0.2));
    g.node("MatMul", {"x", "w"}, "h");
    g.node("Add", {"h", "w"}, "out");  // x is 64 rows: h is 64x64 like w
    g.node("MatMul", {"out", "v"}, "out2");
    g.output("out");
    g.output("out2");
    g.output("v");
    Model model = g.model();
    Session s(model);
    std::vector<Tensor> out = s.run(g.inputs());
    EXPECT_TRUE(compare(out.at(0), g.reference("out"), 1e-5).ok);
    EXPECT_TRUE(compare(out.at(1), g.reference("out2"), 1e-5).ok);
    EXPECT_TRUE(compare(out.at(2), g.reference("v"), 0).ok);
    EXPECT_FALSE(weight(model, "w").storage()->released());
  }
}

TEST(ReleasedWeights, GemmWeightsToo) {
  SCOPED_TRACE(str("seed ", seed()));
  for (int trans_b : {0, 1}) {
    ReferenceGraph g;
    g.input("x", random_f32({24, 128}));
    g.initializer("w", random_f32(trans_b ? Shape{300, 128} : Shape{128, 300}, -0.2, 0.2));
    g.initializer("c", random_f32({300}));
    Attributes a;
    a.set("transB", int64_t{trans_b});
    g.node("Gemm", {"x", "w", "c"}, "out", a);
    g.output("out");
    Model model = g.model();
    const std::vector<float> w_before = values_of(weight(model, "w"));
    Session s(model);
    expect_matches(g, s.run(g.inputs()), "first run");
    EXPECT_TRUE(weight(model, "w").storage()->released()) << "transB " << trans_b;
    expect_matches(g, s.run(g.inputs()), "second run");
    EXPECT_EQ(values_of(weight(model, "w")), w_before) << "transB " << trans_b;
  }
}

// A Conv on oneDNN's direct kernel (5x5: no Winograd, whose transformed weights cannot be
// reordered back) holds its reordered weights; a grouped one on the "grouped" kernel its packed
// weights.
// Runs a one-Conv graph (weight "w") three times: `impl` runs it, its weights are released by
// the first run or kept (`released`), stay so through the second, read back exactly, and the
// session runs on after the read.
void expect_conv_weights(ReferenceGraph& g, const std::string& impl, bool released) {
  Model model = g.model();
  const std::vector<float> w_before = values_of(weight(model, "w"));
  Session s(model);
  const std::vector<NodePlan> plan = s.plan(g.inputs());
  ASSERT_EQ(plan.size(), 1u);
  ASSERT_NE(plan[0].reason.find("'" + impl + "'"), std::string::npos) << plan[0].reason;
  expect_matches(g, s.run(g.inputs()), "first run");
  EXPECT_EQ(weight(model, "w").storage()->released(), released);
  expect_matches(g, s.run(g.inputs()), "second run");
  EXPECT_EQ(weight(model, "w").storage()->released(), released) << "the second run read the weights back";
  EXPECT_EQ(values_of(weight(model, "w")), w_before);
  expect_matches(g, s.run(g.inputs()), "after the read");
}

TEST(ReleasedWeights, ConvWeightsToo) {
  SCOPED_TRACE(str("seed ", seed()));
  for (int64_t group : {1, 2}) {
    SCOPED_TRACE(str("group ", group));
    ReferenceGraph g;
    g.input("x", random_f32({1, 32, 24, 24}));
    g.initializer("w", random_f32({32, 32 / group, 5, 5}, -0.2, 0.2));
    g.initializer("b", random_f32({32}));
    g.node("Conv", {"x", "w", "b"}, "out", {{"pads", std::vector<int64_t>{2, 2, 2, 2}}, {"group", group}});
    g.output("out");
    expect_conv_weights(g, group == 1 ? "onednn" : "grouped", true);
  }
}

// The small-map Conv (a few output pixels against large weights) holds f32 panels over every
// tap: the weights are freed, read back exactly, and the step still recognises them by their
// storage (it does not rebuild them on each call); a 3-D conv too. Panels of cropped taps (a
// 3x3 over a 1x1 map with padding 1: only the centre tap reads the input) do not hold all of
// W, so it stays.
TEST(ReleasedWeights, SmallMapConvWeights) {
  SCOPED_TRACE(str("seed ", seed()));
  using V = std::vector<int64_t>;
  struct Case {
    Shape x, w;
    V pads;
    bool released;
  };
  for (const Case& c : {Case{{1, 64, 4, 4}, {96, 64, 3, 3}, {1, 1, 1, 1}, true},
                        Case{{1, 40, 2, 2, 3}, {72, 40, 2, 1, 3}, {0, 0, 1, 0, 0, 1}, true},
                        Case{{1, 64, 1, 1}, {96, 64, 3, 3}, {1, 1, 1, 1}, false}}) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
    ReferenceGraph g;
    g.input("x", random_f32(c.x));
    g.initializer("w", random_f32(c.w, -0.2, 0.2));
    g.node("Conv", {"x", "w"}, "out", {{"pads", c.pads}});
    g.output("out");
    expect_conv_weights(g, "small_map", c.released);
  }
}

// One weight read by three products, two of them through Identity nodes (how PyTorch exports a
// stack of copies of one layer, or tied weights): the Identity outputs are that constant, not
// copies, and its bytes are freed once every reader holds it, not while a reader through an
// Identity still reads them as stored.
TEST(ReleasedWeights, SharedThroughIdentity) {
  SCOPED_TRACE(str("seed ", seed()));
  for (bool add_reads_it : {false, true}) {
    SCOPED_TRACE(add_reads_it ? "an Add reads it through an Identity" : "products only");
    ReferenceGraph g;
    g.input("x", random_f32({192, 192}));
    g.initializer("w", random_f32({192, 192}, -0.2, 0.2));
    g.node("Identity", {"w"}, "w_a");
    g.node("Identity", {"w"}, "w_b");
    g.node("MatMul", {"x", "w"}, "h1");
    g.node("Relu", {"h1"}, "r1");
    g.node("MatMul", {"r1", "w_a"}, "h2");
    g.node("Relu", {"h2"}, "r2");
    g.node("MatMul", {"r2", "w_b"}, "h3");
    if (add_reads_it) {
      g.node("Add", {"h3", "w_b"}, "out");
    } else {
      g.node("Identity", {"h3"}, "out");
    }
    g.output("out");
    Model model = g.model();
    const std::vector<float> w_before = values_of(weight(model, "w"));
    Session s(model);
    int shared = 0;
    for (const NodePlan& n : s.plan(g.inputs()))
      if (n.path == Path::folded && n.reason.find("shared: no copy") != std::string::npos) ++shared;
    EXPECT_EQ(shared, 2);
    expect_matches(g, s.run(g.inputs()), "first run");
    EXPECT_EQ(weight(model, "w").storage()->released(), !add_reads_it);
    expect_matches(g, s.run(g.inputs()), "second run");
    EXPECT_EQ(values_of(weight(model, "w")), w_before);
    expect_matches(g, s.run(g.inputs()), "after the read");
  }
}

TEST(ReusedOutputs, OnlyOnceTheCallerHasLetGo) {
  SCOPED_TRACE(str("seed ", seed()));
  ReferenceGraph g = two_linears(16, 256, 160);
  ReferenceGraph other = two_linears(16, 256, 160);  // other inputs, same shapes
  std::map<std::string, Tensor> x2 = {{"x", other.inputs().at("x")}};
  Session s(g.model());
  Tensor first = s.run(g.inputs()).at(0);
  const std::vector<float> first_values = values_of(first);
  const void* first_buffer = first.raw_data();
  // Held by the caller: the next run writes elsewhere and leaves it alone.
  Tensor second = s.run(x2).at(0);
  EXPECT_NE(second.raw_data(), first_buffer);
  EXPECT_EQ(values_of(first), first_values);
  // A view of an output holds it too.
  const void* second_buffer = second.raw_data();
  Tensor view = second.reshape({static_cast<int64_t>(second.numel())});
  second = Tensor();
  Tensor third = s.run(g.inputs()).at(0);
  EXPECT_NE(third.raw_data(), second_buffer);
  EXPECT_EQ(values_of(third), first_values);
  // Let go: the run after writes into the same buffer, and the values are the new run's.
  const void* third_buffer = third.raw_data();
  third = Tensor();
  Tensor fourth = s.run(x2).at(0);
  EXPECT_EQ(fourth.raw_data(), third_buffer);
  Tensor expect = Session(g.model()).run(x2).at(0);
  EXPECT_TRUE(compare(fourth, expect.cast(DType::f64), 1e-6).ok) << "the reused buffer";
}

TEST(ReleasedWeights, StorageReleaseAndRebuild) {
  Tensor t = random_f32({1000});
  const std::vector<float> before = values_of(t);
  int rebuilds = 0;
  ASSERT_TRUE(t.storage()->release([&](void* dst) {
    ++rebuilds;
    std::memcpy(dst, before.data(), before.size() * sizeof(float));
  }));
  EXPECT_TRUE(t.storage()->released());
  EXPECT_FALSE(t.storage()->release([](void*) {})) << "already released";
  EXPECT_EQ(values_of(t), before);
  EXPECT_EQ(values_of(t), before);
  EXPECT_EQ(rebuilds, 1);
  // A rebuild that fails leaves the storage released, and the next read tries again.
  ASSERT_TRUE(t.storage()->release([](void*) { throw InvalidArgument("no"); }));
  EXPECT_THROW(t.raw_data(), InvalidArgument);
  EXPECT_TRUE(t.storage()->released());
  // Borrowed memory is not the storage's to free; a storage dropped while released is fine.
  std::vector<float> mine(8, 1.0f);
  Tensor wrapped = Tensor::wrap_host(mine.data(), {8}, DType::f32);
  EXPECT_FALSE(wrapped.storage()->release([](void*) {}));
  EXPECT_FALSE(random_f32({4}).storage()->release(nullptr)) << "no rebuild";
}

}  // namespace
}  // namespace porta::test
