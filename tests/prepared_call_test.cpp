// Prepared calls (KernelContext::state): a session step of the cpu Conv and MatMul keeps its
// primitive, memory objects and packed constant weights, and later runs only rebind data
// pointers. Each session here runs several times with fresh inputs of the same shapes (and a
// graph output that gets new memory every run); every run must equal the eager call, which
// takes the unprepared path with the weights as plain tensors.
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include "tests/test_util.hpp"

namespace porta::test {
namespace {

void declare(onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

void initializer(onnx::GraphProto* g, const std::string& name, const Tensor& value) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : value.shape()) t->add_dims(d);
  for (int64_t i = 0; i < value.numel(); ++i) t->add_float_data(value.data<float>()[i]);
}

Tensor random(const Shape& shape) {
  InputSpec spec;
  spec.shape = shape;
  return make_input(spec, DType::f32);
}

// x -> op(x, W) -> y for op MatMul or Conv, W a constant initializer.
Model one_op_model(const std::string& op, const Shape& x, const Tensor& w, const Shape& y) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("prepared");
  declare(g->add_input(), "x", x);
  initializer(g, "w", w);
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name("node");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  declare(g->add_output(), "y", y);
  std::string bytes = m.SerializeAsString();
  return Model::from_bytes(bytes.data(), bytes.size());
}

void check_runs(const std::string& op, const Shape& x_shape, const Tensor& w, const Shape& y_shape) {
  Session session(one_op_model(op, x_shape, w, y_shape));
  for (int run = 0; run < 3; ++run) {
    Tensor x = random(x_shape);
    Tensor got = session.run({{"x", x}}).at(0);
    Tensor want = call_op(op, {x, w}).at(0);
    Comparison c = compare(got, want.cast(DType::f64), 1e-5);
    EXPECT_TRUE(c.ok) << op << " run " << run << ": " << c.message;
  }
}

TEST(PreparedCall, MatMulWithConstantWeightsEveryRun) {
  check_runs("MatMul", {5, 16}, random({16, 24}), {5, 24});        // 2-d: packed B
  check_runs("MatMul", {2, 7, 16}, random({16, 33}), {2, 7, 33});  // rows of a batch folded
  check_runs("MatMul", {1, 1}, random({1, 1}), {1, 1});
}

TEST(PreparedCall, ConvWithConstantWeightsEveryRun) {
  check_runs("Conv", {1, 3, 9, 8}, random({5, 3, 3, 3}), {1, 5, 7, 6});
  check_runs("Conv", {2, 16, 6, 6}, random({16, 16, 3, 3}), {2, 16, 4, 4});  // Winograd-eligible
}

}  // namespace
}  // namespace porta::test
