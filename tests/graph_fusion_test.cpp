// Conv + BatchNormalization folding and Conv + Relu fusion (runtime/graph_fusion.hpp): the
// fused cnn model drops its BatchNormalization and Relu nodes and still matches PyTorch's saved
// outputs and the unfused session; a Conv whose output is read twice (or is a graph output) is
// left alone, and so is every Conv of a session that keeps intermediate values.
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <map>
#include <string>

#include "tests/model_fixtures.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

int count_op(const std::vector<NodePlan>& plan, const std::string& op) {
  int n = 0;
  for (auto& p : plan) n += p.op == op;
  return n;
}

TEST(GraphFusion, CnnBatchNormsFoldIntoConvs) {
  ModelFixture f = load_fixture("cnn");
  std::map<std::string, Tensor> inputs;
  for (auto& [name, file] : f.inputs) inputs[name] = read_npy(file);
  Tensor expected = read_npy(f.outputs.at(0).second);

  Session folded(Model::load(f.model_path()));
  auto plan = folded.plan(inputs);
  EXPECT_EQ(count_op(plan, "BatchNormalization"), 0);
  EXPECT_EQ(count_op(plan, "Conv"), 3);
  EXPECT_EQ(count_op(plan, "Relu"), 0);
  Tensor got = folded.run(inputs).at(0);
  Comparison vs_torch = compare(got, expected.cast(DType::f64), 1e-5);
  EXPECT_TRUE(vs_torch.ok) << vs_torch.message;

  FuseSetting off("0");
  Session unfolded(Model::load(f.model_path()));
  EXPECT_EQ(count_op(unfolded.plan(inputs), "BatchNormalization"), 3);
  EXPECT_EQ(count_op(unfolded.plan(inputs), "Relu"), 3);
  Tensor plain = unfolded.run(inputs).at(0);
  Comparison vs_unfolded = compare(got, plain.cast(DType::f64), 1e-5);
  EXPECT_TRUE(vs_unfolded.ok) << vs_unfolded.message;
}

// y = Conv(x, W); z = BatchNormalization(y); out = y + z: y has two readers, so the
// BatchNormalization cannot be folded into the Conv.
Model conv_read_twice_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("conv_read_twice");
  auto declare = [](onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  declare(g->add_input(), "x", {1, 2, 5, 5});
  declare(g->add_output(), "out", {1, 3, 5, 5});
  auto constant = [&](const std::string& name, std::vector<int64_t> dims, float base) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(base + 0.1f * static_cast<float>(i % 7));
  };
  constant("W", {3, 2, 3, 3}, -0.3f);
  constant("scale", {3}, 0.5f);
  constant("shift", {3}, -0.2f);
  constant("mean", {3}, 0.1f);
  constant("var", {3}, 0.7f);
  onnx::NodeProto* conv = g->add_node();
  conv->set_op_type("Conv");
  conv->add_input("x");
  conv->add_input("W");
  conv->add_output("y");
  onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  onnx::NodeProto* bn = g->add_node();
  bn->set_op_type("BatchNormalization");
  for (const char* in : {"y", "scale", "shift", "mean", "var"}) bn->add_input(in);
  bn->add_output("z");
  onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("y");
  add->add_input("z");
  add->add_output("out");
  std::string bytes = m.SerializeAsString();
  return Model::from_bytes(bytes.data(), bytes.size());
}

// The same pattern values as the model's initializers (base + 0.1 * (i % 7)).
Tensor pattern(const Shape& shape, float base) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = base + 0.1f * static_cast<float>(i % 7);
  return Tensor::from_values(v, shape, DType::f32);
}

TEST(GraphFusion, ConvReadTwiceKeepsItsBatchNorm) {
  Session session(conv_read_twice_model());
  InputSpec spec;
  spec.shape = {1, 2, 5, 5};
  std::map<std::string, Tensor> inputs{{"x", make_input(spec, DType::f32)}};
  EXPECT_EQ(count_op(session.plan(inputs), "BatchNormalization"), 1);
  Tensor got = session.run(inputs).at(0);
  Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  Tensor y = call_op("Conv", {inputs["x"], pattern({3, 2, 3, 3}, -0.3f)}, pads).at(0);
  Tensor z = call_op("BatchNormalization", {y, pattern({3}, 0.5f), pattern({3}, -0.2f), pattern({3}, 0.1f),
                                            pattern({3}, 0.7f)}, {}, 1).at(0);
  Tensor want = call_op("Add", {y, z}).at(0);
  Comparison c = compare(got, want.cast(DType::f64), 1e-6);
  EXPECT_TRUE(c.ok) << c.message;
}

// y = Conv(x, W, B) with pads 1; r = Relu(y); outputs r, plus y when `y_is_output`.
Model conv_relu_model(bool y_is_output) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("conv_relu");
  auto declare = [](onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  declare(g->add_input(), "x", {2, 2, 5, 6});
  declare(g->add_output(), "r", {2, 3, 5, 6});
  if (y_is_output) declare(g->add_output(), "y", {2, 3, 5, 6});
  auto constant = [&](const std::string& name, std::vector<int64_t> dims, float base) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(base + 0.1f * static_cast<float>(i % 7));
  };
  constant("W", {3, 2, 3, 3}, -0.3f);
  constant("B", {3}, -0.1f);
  onnx::NodeProto* conv = g->add_node();
  conv->set_op_type("Conv");
  for (const char* in : {"x", "W", "B"}) conv->add_input(in);
  conv->add_output("y");
  onnx::AttributeProto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("y");
  relu->add_output("r");
  std::string bytes = m.SerializeAsString();
  return Model::from_bytes(bytes.data(), bytes.size());
}

// Relu(Conv(x)) computed op by op in eager mode (no fusion there).
Tensor conv_relu_expected(const Tensor& x) {
  Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  Tensor y = call_op("Conv", {x, pattern({3, 2, 3, 3}, -0.3f), pattern({3}, -0.1f)}, pads).at(0);
  return call_op("Relu", {y}).at(0);
}

TEST(GraphFusion, ConvReluFusesAndMatchesUnfused) {
  InputSpec spec;
  spec.shape = {2, 2, 5, 6};
  std::map<std::string, Tensor> inputs{{"x", make_input(spec, DType::f32)}};
  Session session(conv_relu_model(false));
  auto plan = session.plan(inputs);
  EXPECT_EQ(count_op(plan, "Relu"), 0);
  ASSERT_EQ(count_op(plan, "Conv"), 1);
  Tensor got = session.run(inputs).at(0);
  Comparison c = compare(got, conv_relu_expected(inputs["x"]).cast(DType::f64), 1e-6);
  EXPECT_TRUE(c.ok) << c.message;
  // The pattern weights and bias give negative pre-activations: the Relu really clamps.
  Tensor d = got.cast(DType::f64);
  int64_t zeros = 0;
  for (int64_t i = 0; i < d.numel(); ++i) zeros += d.data<double>()[i] == 0.0;
  EXPECT_GT(zeros, 0);
}

TEST(GraphFusion, ConvOutputReadElsewhereKeepsItsRelu) {
  InputSpec spec;
  spec.shape = {2, 2, 5, 6};
  std::map<std::string, Tensor> inputs{{"x", make_input(spec, DType::f32)}};
  Session session(conv_relu_model(true));
  EXPECT_EQ(count_op(session.plan(inputs), "Relu"), 1);
  std::vector<Tensor> got = session.run(inputs);
  Comparison c = compare(got.at(0), conv_relu_expected(inputs["x"]).cast(DType::f64), 1e-6);
  EXPECT_TRUE(c.ok) << c.message;
  Tensor d = got.at(1).cast(DType::f64);  // y itself, not clamped
  int64_t negatives = 0;
  for (int64_t i = 0; i < d.numel(); ++i) negatives += d.data<double>()[i] < 0.0;
  EXPECT_GT(negatives, 0);
}

// The cpu kernel's post-op against Relu after the unfused Conv, and against the float64
// reference (which honours the attribute too); names that are no fused activation are
// rejected. (The other activations: tests/activation_fusion_test.cpp and
// tests/fused_activation_test.cpp.)
TEST(GraphFusion, ConvReluAttributeOnCpuKernel) {
  InputSpec spec;
  spec.shape = {2, 2, 5, 6};
  Tensor x = make_input(spec, DType::f32);
  Attributes fused{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"porta_activation", std::string("Relu")}};
  Tensor got = call_op("Conv", {x, pattern({3, 2, 3, 3}, -0.3f), pattern({3}, -0.1f)}, fused).at(0);
  Comparison c = compare(got, conv_relu_expected(x).cast(DType::f64), 1e-6);
  EXPECT_TRUE(c.ok) << c.message;
  Tensor ref = reference_op("Conv", {x, pattern({3, 2, 3, 3}, -0.3f), pattern({3}, -0.1f)}, fused, 1).at(0);
  Comparison r = compare(got, ref, 1e-5);
  EXPECT_TRUE(r.ok) << r.message;
  Attributes bad{{"porta_activation", std::string("Softmax")}};
  EXPECT_THROW(call_op("Conv", {x, pattern({3, 2, 3, 3}, -0.3f)}, bad), InvalidArgument);
}

TEST(GraphFusion, KeepValuesSessionDoesNotFuse) {
  InputSpec spec;
  spec.shape = {2, 2, 5, 6};
  std::map<std::string, Tensor> inputs{{"x", make_input(spec, DType::f32)}};
  SessionOptions options;
  options.keep_values = true;
  Session session(conv_relu_model(false), options);
  EXPECT_EQ(count_op(session.plan(inputs), "Relu"), 1);
}

}  // namespace
}  // namespace porta::test
