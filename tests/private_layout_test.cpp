// Private activation layouts between cpu steps (runtime/plan_layouts.cpp,
// chain_private_layouts; kernels/cpu/dnn_layout.hpp): a session that hands activations between
// Conv, pooling, elementwise and per-channel Mul steps in oneDNN's channels-last layout
// computes what the same graph computes op by op in eager mode, and what a PORTA_FUSE=0
// session (all plain) computes: chains with any channel count (3, 16, 24, 32), 1-D and 2-D
// convs, depthwise convs, pools with padding, elementwise ops between them (tied: all operands
// in the layout or none), squeeze-excite blocks, values read by plain-only ops, and values that
// are graph outputs.
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <map>
#include <string>

#include "tests/test_util.hpp"

namespace porta::test {
namespace {


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
    g_->set_name("private_layout");
    declare(g_->add_input(), input, x.shape());
    values_[input] = x;
  }
  void conv(const std::string& x, const std::string& y, int64_t out_channels, bool relu, int64_t pad = 1,
            int64_t group = 1, int64_t kernel = 3) {
    const Tensor& in = values_.at(x);
    Shape ws{out_channels, in.dim(1) / group};
    for (int i = 2; i < in.rank(); ++i) ws.push_back(kernel);
    std::string w = y + "_W", b = y + "_B";
    initializer(w, weights(ws, 0.01f));
    initializer(b, weights({out_channels}, 0.02f));
    std::vector<int64_t> pads(2 * (in.rank() - 2), pad);
    onnx::NodeProto* n = node("Conv", {x, w, b}, relu ? y + "_pre" : y);
    ints(n, "pads", pads);
    Attributes a{{"pads", pads}};
    if (group != 1) {
      onnx::AttributeProto* g = n->add_attribute();
      g->set_name("group");
      g->set_type(onnx::AttributeProto::INT);
      g->set_i(group);
      a.set("group", group);
    }
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
  void add(const std::string& a, const std::string& b, const std::string& y) { op("Add", {a, b}, y); }
  // Any op without attributes (Add, Mul, Sigmoid, GlobalAveragePool...).
  void op(const std::string& name, const std::vector<std::string>& inputs, const std::string& y) {
    node(name, inputs, y);
    std::vector<Tensor> in;
    for (const std::string& i : inputs) in.push_back(values_.at(i));
    values_[y] = call_op(name, in, {}, 1).at(0);
  }
  void concat(const std::vector<std::string>& inputs, const std::string& y, int64_t axis) {
    onnx::NodeProto* n = node("Concat", inputs, y);
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
    std::vector<Tensor> in;
    for (const std::string& i : inputs) in.push_back(values_.at(i));
    values_[y] = call_op("Concat", in, Attributes{{"axis", axis}}).at(0);
  }
  // Inference BatchNormalization with constant statistics (variance kept positive).
  void batch_norm(const std::string& x, const std::string& y) {
    int64_t c = values_.at(x).dim(1);
    initializer(y + "_scale", weights({c}, 1.0f));
    initializer(y + "_bias", weights({c}, 0.1f));
    initializer(y + "_mean", weights({c}, 0.05f));
    initializer(y + "_var", weights({c}, 0.5f));
    op("BatchNormalization", {x, y + "_scale", y + "_bias", y + "_mean", y + "_var"}, y);
  }
  // Clip with constant scalar bounds (inputs, as from opset 11).
  void clip(const std::string& x, const std::string& y, float lo, float hi) {
    initializer(y + "_lo", Tensor::from_values(std::vector<double>{lo}, {}, DType::f32));
    initializer(y + "_hi", Tensor::from_values(std::vector<double>{hi}, {}, DType::f32));
    op("Clip", {x, y + "_lo", y + "_hi"}, y);
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
    FuseSetting off("0");
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

int layout_notes(const std::vector<NodePlan>& plan) {
  int n = 0;
  for (const NodePlan& p : plan) n += p.reason.find("channels-last") != std::string::npos;
  return n;
}

// The plan reason of the node named `node`.
std::string reason_of(const std::vector<NodePlan>& plan, const std::string& node) {
  for (const NodePlan& p : plan)
    if (p.node == node) return p.reason;
  return "(no node " + node + ")";
}

// Conv(+Relu) -> MaxPool -> Conv -> MaxPool (padded 3x3 stride 1) -> Conv -> MaxPool -> output,
// with channel counts 3 -> 16 -> 32 -> 24 (no whole number of 16-channel blocks: channels-last
// takes any count) and two images.
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
  EXPECT_EQ(layout_notes(plan), 6) << "every Conv and MaxPool hands its activations on channels-last";
}

// A Conv output also read by Add, and a MaxPool output that is a graph output and also feeds a
// Conv: those values stay plain (Add ties its operands: the ones it shares with the graph output
// go plain too), the rest of the chain is still channels-last.
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

// A MobileNet-style block: pointwise Conv -> Clip (scalar bounds) -> depthwise Conv -> Clip ->
// pointwise Conv -> residual Add -> Relu -> Conv, all handed on channels-last; then an Add of
// a Conv output and the graph input, which stays plain. Both Adds (and the Relu) fuse into the
// Conv before them (tests/residual_fusion_test.cpp).
TEST(GraphFusionLayout, ElementwiseAndDepthwiseStayChannelsLast) {
  GraphMaker g("x", random_input({2, 24, 10, 9}));
  g.conv("x", "stem", 24, false, 1);
  g.conv("stem", "expand", 144, false, 0, 1, 1);
  g.clip("expand", "e6", 0.0f, 6.0f);
  g.conv("e6", "dw", 144, false, 1, 144);
  g.clip("dw", "d6", 0.0f, 6.0f);
  g.conv("d6", "project", 24, false, 0, 1, 1);
  g.add("project", "stem", "res");
  g.op("Relu", {"res"}, "act");
  g.conv("act", "tail", 24, false);
  g.add("tail", "x", "out");  // x is a graph input: tail and out stay plain
  g.output("out");
  std::vector<NodePlan> plan = check_against_eager(g, "x");
  // The Clips fuse into the Convs before them (oneDNN post-ops); so do the residual Adds, and
  // the Relu after the first, on channels-last values.
  const std::string project = reason_of(plan, "project_node"), tail = reason_of(plan, "tail_node");
  EXPECT_NE(project.find("adds the other input of the Add"), std::string::npos) << project;
  EXPECT_NE(project.find("applies the Relu"), std::string::npos) << project;
  EXPECT_NE(project.find("input and output kept"), std::string::npos) << project;
  EXPECT_NE(reason_of(plan, "dw_node").find("input and output kept"), std::string::npos) << reason_of(plan, "dw_node");
  EXPECT_NE(tail.find("adds the other input of the Add"), std::string::npos) << tail;
  EXPECT_NE(tail.find("input kept"), std::string::npos) << tail;
  EXPECT_EQ(tail.find("output kept"), std::string::npos) << tail;
}

// Squeeze-excite: GlobalAveragePool reads channels-last, the squeeze/excite Convs work on
// N x C x 1 x 1, and Mul(scale, x) scales x's channels in place of layout (the scale as input
// 0, as torchvision exports it), with two images so each has its own scale; GlobalMaxPool on
// the scaled value.
TEST(GraphFusionLayout, SqueezeExciteBlockStaysChannelsLast) {
  GraphMaker g("x", random_input({2, 32, 7, 6}));
  g.conv("x", "c1", 32, true);
  g.op("GlobalAveragePool", {"c1"}, "squeezed");
  g.conv("squeezed", "fc1", 8, true, 0, 1, 1);
  g.conv("fc1", "fc2", 32, false, 0, 1, 1);
  g.op("Sigmoid", {"fc2"}, "scale");
  g.op("Mul", {"scale", "c1"}, "scaled");
  g.conv("scaled", "c2", 16, false);
  g.op("GlobalMaxPool", {"c2"}, "gmax");
  g.output("gmax");
  std::vector<NodePlan> plan = check_against_eager(g, "x");
  EXPECT_NE(reason_of(plan, "squeezed_node").find("input kept"), std::string::npos) << reason_of(plan, "squeezed_node");
  EXPECT_NE(reason_of(plan, "scaled_node").find("input and output kept"), std::string::npos)
      << reason_of(plan, "scaled_node");
  EXPECT_NE(reason_of(plan, "gmax_node").find("input kept"), std::string::npos) << reason_of(plan, "gmax_node");
}

// A DenseNet-style block: channel Concats of Conv outputs (odd channel counts) feeding a
// BatchNormalization (not foldable: it follows a Concat) -> Relu -> Conv, all channels-last;
// a Concat along the height stays plain, and so do its operands.
TEST(GraphFusionLayout, ConcatAndBatchNormStayChannelsLast) {
  GraphMaker g("x", random_input({2, 8, 9, 7}));
  g.conv("x", "stem", 24, true);
  g.conv("stem", "grow1", 12, true);
  g.concat({"stem", "grow1"}, "cat1", 1);
  g.batch_norm("cat1", "bn1");
  g.op("Relu", {"bn1"}, "r1");
  g.conv("r1", "grow2", 12, false, 0, 1, 1);
  g.concat({"cat1", "grow2"}, "cat2", -3);
  g.conv("cat2", "c3", 16, false);
  g.conv("c3", "c4", 16, false);
  g.concat({"c3", "c4"}, "rows", 2);  // along H: plain, so c3 and c4 are written plain
  g.output("rows");
  std::vector<NodePlan> plan = check_against_eager(g, "x");
  for (const char* n : {"cat1_node", "bn1_node", "cat2_node"})
    EXPECT_NE(reason_of(plan, n).find("input and output kept"), std::string::npos) << n << ": " << reason_of(plan, n);
  EXPECT_EQ(reason_of(plan, "rows_node").find("channels-last"), std::string::npos) << reason_of(plan, "rows_node");
  EXPECT_EQ(reason_of(plan, "c4_node").find("output kept"), std::string::npos) << reason_of(plan, "c4_node");
}

// Sessions that keep every value, and PORTA_FUSE=0, keep plain layouts (no layout notes).
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
  EXPECT_EQ(layout_notes(kept.plan(inputs)), 0);
  Comparison c = compare(kept.run(inputs).at(0), g.value("c2").cast(DType::f64), 1e-5);
  EXPECT_TRUE(c.ok) << c.message;
  FuseSetting off("0");
  EXPECT_EQ(layout_notes(Session(g.model()).plan(inputs)), 0);
}

}  // namespace
}  // namespace porta::test
