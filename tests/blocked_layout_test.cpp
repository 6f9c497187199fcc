// Blocked activation layouts between cpu Conv and MaxPool steps (runtime/session_compile.cpp,
// chain_blocked_layouts; kernels/cpu/dnn_layout.hpp): a session that hands activations from
// Conv to MaxPool to Conv in oneDNN's channel-blocked layout computes what the same graph
// computes op by op in eager mode, and what a PORTA_FUSE=0 session (all plain) computes, for
// chains mixing blockable channel counts (16, 32) with ones that are not (24, 3), 1-D and
// 2-D convs, pools with padding, a value read by a non-Conv op, and a pooled value that is a
// graph output.
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <map>
#include <string>

#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// Sets PORTA_FUSE for the scope (restored after).
struct FuseOff {
  FuseOff() {
    if (const char* old = std::getenv("PORTA_FUSE")) saved = old, had = true;
    setenv("PORTA_FUSE", "0", 1);
  }
  ~FuseOff() {
    if (had) setenv("PORTA_FUSE", saved.c_str(), 1);
    else unsetenv("PORTA_FUSE");
  }
  std::string saved;
  bool had = false;
};

// Deterministic weights: small values of both signs, so Relu clamps some outputs.
Tensor weights(const Shape& shape, float base) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + 0.05f * static_cast<float>(static_cast<int>(i % 11) - 5);
  return Tensor::from_values(v, shape, DType::f32);
}

// Builds a small ONNX graph node by node; conv() and pool() also compute the node eagerly
// (op by op, plain layouts) so the test has its expected values.
class GraphMaker {
 public:
  explicit GraphMaker(const std::string& input, const Tensor& x) {
    m_.set_ir_version(8);
    m_.add_opset_import()->set_version(17);
    g_ = m_.mutable_graph();
    g_->set_name("blocked_layout");
    declare(g_->add_input(), input, x.shape());
    values_[input] = x;
  }
  void conv(const std::string& x, const std::string& y, int64_t out_channels, bool relu, int64_t pad = 1) {
    const Tensor& in = values_.at(x);
    Shape ws{out_channels, in.dim(1)};
    for (int i = 2; i < in.rank(); ++i) ws.push_back(3);
    std::string w = y + "_W", b = y + "_B";
    initializer(w, weights(ws, 0.01f));
    initializer(b, weights({out_channels}, 0.02f));
    std::vector<int64_t> pads(2 * (in.rank() - 2), pad);
    onnx::NodeProto* n = node("Conv", {x, w, b}, relu ? y + "_pre" : y);
    ints(n, "pads", pads);
    Attributes a{{"pads", pads}};
    Tensor out = call_op("Conv", {in, values_.at(w), values_.at(b)}, a).at(0);
    if (relu) {
      node("Relu", {y + "_pre"}, y);
      out = call_op("Relu", {out}).at(0);
    }
    values_[y] = out;
  }
  void pool(const std::string& x, const std::string& y, int64_t kernel, int64_t stride, int64_t pad) {
    const Tensor& in = values_.at(x);
    size_t spatial = in.rank() - 2;
    std::vector<int64_t> k(spatial, kernel), s(spatial, stride), p(2 * spatial, pad);
    onnx::NodeProto* n = node("MaxPool", {x}, y);
    ints(n, "kernel_shape", k);
    ints(n, "strides", s);
    ints(n, "pads", p);
    values_[y] = call_op("MaxPool", {in}, Attributes{{"kernel_shape", k}, {"strides", s}, {"pads", p}}).at(0);
  }
  void add(const std::string& a, const std::string& b, const std::string& y) {
    node("Add", {a, b}, y);
    values_[y] = call_op("Add", {values_.at(a), values_.at(b)}).at(0);
  }
  void output(const std::string& y) {
    declare(g_->add_output(), y, values_.at(y).shape());
    outputs_.push_back(y);
  }
  Model model() const {
    std::string bytes = m_.SerializeAsString();
    return Model::from_bytes(bytes.data(), bytes.size());
  }
  const Tensor& value(const std::string& name) const { return values_.at(name); }
  const std::vector<std::string>& outputs() const { return outputs_; }

 private:
  static void declare(onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void initializer(const std::string& name, const Tensor& value) {
    onnx::TensorProto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : value.shape()) t->add_dims(d);
    for (int64_t i = 0; i < value.numel(); ++i) t->add_float_data(value.data<float>()[i]);
    values_[name] = value;
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
    onnx::NodeProto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(output + "_node");
    for (auto& in : inputs) n->add_input(in);
    n->add_output(output);
    return n;
  }
  static void ints(onnx::NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }

  onnx::ModelProto m_;
  onnx::GraphProto* g_ = nullptr;
  std::map<std::string, Tensor> values_;
  std::vector<std::string> outputs_;
};

Tensor random_input(const Shape& shape) {
  InputSpec spec;
  spec.shape = shape;
  return make_input(spec, DType::f32);
}

// Runs the graph in a session (blocked chains) and in a PORTA_FUSE=0 session (plain), and
// compares both with the eager values. Returns the session's node plans.
std::vector<NodePlan> check_against_eager(const GraphMaker& g, const std::string& input) {
  std::map<std::string, Tensor> inputs{{input, g.value(input)}};
  Session session(g.model());
  std::vector<NodePlan> plan = session.plan(inputs);
  std::vector<Tensor> got = session.run(inputs);
  std::vector<Tensor> again = session.run(inputs);  // a second run reuses buffers and primitives
  std::vector<Tensor> plain;
  {
    FuseOff off;
    plain = Session(g.model()).run(inputs);
  }
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    Tensor want = g.value(g.outputs()[k]).cast(DType::f64);
    for (const Tensor* t : {&got.at(k), &again.at(k), &plain.at(k)}) {
      Comparison c = compare(*t, want, 1e-5);
      EXPECT_TRUE(c.ok) << g.outputs()[k] << ": " << c.message;
    }
  }
  return plan;
}

int blocked_notes(const std::vector<NodePlan>& plan) {
  int n = 0;
  for (const NodePlan& p : plan) n += p.reason.find("channel-blocked") != std::string::npos;
  return n;
}

// Conv(+Relu) -> MaxPool -> Conv -> MaxPool (padded 3x3 stride 1) -> Conv -> MaxPool -> output,
// with channel counts 3 -> 16 -> 32 -> 24 (24 is a whole number of 8-channel blocks but not
// of 16-channel ones) and two images.
TEST(GraphFusionLayout, ConvPoolChainMatchesEager) {
  GraphMaker g("x", random_input({2, 3, 20, 18}));
  g.conv("x", "c1", 16, true);
  g.pool("c1", "p1", 2, 2, 0);
  g.conv("p1", "c2", 32, true);
  g.pool("c2", "p2", 3, 1, 1);
  g.conv("p2", "c3", 24, false);
  g.pool("c3", "p3", 2, 2, 0);
  g.output("p3");
  std::vector<NodePlan> plan = check_against_eager(g, "x");
  EXPECT_EQ(blocked_notes(plan), 6) << "every Conv and MaxPool hands its activations on blocked";
}

// A Conv output also read by Add, and a MaxPool output that is a graph output and also feeds a
// Conv: those values stay plain, the rest of the chain is still blocked.
TEST(GraphFusionLayout, ValuesReadElsewhereStayPlain) {
  GraphMaker g("x", random_input({1, 16, 12, 12}));
  g.conv("x", "c1", 16, true);
  g.pool("c1", "p1", 2, 2, 0);
  g.conv("p1", "c2", 16, false);
  g.add("c2", "p1", "sum");  // c2 read by Add: plain
  g.pool("sum", "p2", 2, 2, 0);
  g.conv("p2", "c3", 32, true);
  g.pool("c3", "p3", 2, 1, 0);
  g.conv("p3", "c4", 16, false);
  g.output("sum");
  g.output("p3");  // a graph output that a Conv reads too
  g.output("c4");
  check_against_eager(g, "x");
}

// 1-D convs and pools (nCw16c), and a MaxPool reading a graph input.
TEST(GraphFusionLayout, OneDimensionalChainAndPoolOfInput) {
  GraphMaker g("x", random_input({2, 16, 40}));
  g.pool("x", "p0", 2, 2, 0);
  g.conv("p0", "c1", 32, true);
  g.pool("c1", "p1", 2, 2, 0);
  g.conv("p1", "c2", 16, true);
  g.output("c2");
  check_against_eager(g, "x");
}

// Sessions that keep every value, and PORTA_FUSE=0, keep plain layouts (no blocked notes).
TEST(GraphFusionLayout, KeepValuesAndFuseOffStayPlain) {
  GraphMaker g("x", random_input({1, 16, 8, 8}));
  g.conv("x", "c1", 16, true);
  g.pool("c1", "p1", 2, 2, 0);
  g.conv("p1", "c2", 16, false);
  g.output("c2");
  std::map<std::string, Tensor> inputs{{"x", g.value("x")}};
  SessionOptions keep;
  keep.keep_values = true;
  Session kept(g.model(), keep);
  EXPECT_EQ(blocked_notes(kept.plan(inputs)), 0);
  Comparison c = compare(kept.run(inputs).at(0), g.value("c2").cast(DType::f64), 1e-5);
  EXPECT_TRUE(c.ok) << c.message;
  FuseOff off;
  EXPECT_EQ(blocked_notes(Session(g.model()).plan(inputs)), 0);
}

}  // namespace
}  // namespace porta::test
