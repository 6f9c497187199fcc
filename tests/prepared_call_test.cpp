// Prepared calls (KernelContext::state): a session step of the cpu Conv and MatMul keeps its
// primitive, memory objects and packed constant weights, and later runs only rebind data
// pointers. Each session here runs several times with fresh inputs of the same shapes (and a
// graph output that gets new memory every run); every run must equal the eager call, which
// takes the unprepared path with the weights as plain tensors.
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include "tests/onnx_graph_builder.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

void declare(onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
  OnnxGraph::declare(v, name, dims);  // tests/onnx_graph_builder.hpp
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

// x -> op(x, W[, C]) -> y for op MatMul, Conv or Gemm, W and C constant initializers; Gemm
// with transB = 1 (a Linear layer).
Model one_op_model(const std::string& op, const Shape& x, const Tensor& w, const Shape& y, const Tensor& c = {}) {
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
  if (c.defined()) {
    initializer(g, "c", c);
    n->add_input("c");
  }
  if (op == "Gemm") {
    onnx::AttributeProto* t = n->add_attribute();
    t->set_name("transB");
    t->set_type(onnx::AttributeProto::INT);
    t->set_i(1);
  }
  n->add_output("y");
  declare(g->add_output(), "y", y);
  std::string bytes = m.SerializeAsString();
  return Model::from_bytes(bytes.data(), bytes.size());
}

void check_runs(const std::string& op, const Shape& x_shape, const Tensor& w, const Shape& y_shape,
                const Tensor& c = {}) {
  Session session(one_op_model(op, x_shape, w, y_shape, c));
  Attributes attrs;
  if (op == "Gemm") attrs.set("transB", int64_t{1});
  for (int run = 0; run < 3; ++run) {
    Tensor x = random(x_shape);
    Tensor got = session.run({{"x", x}}).at(0);
    std::vector<Tensor> in{x, w};
    if (c.defined()) in.push_back(c);
    Tensor want = call_op(op, in, attrs).at(0);
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
  // Winograd on up to two threads (2^24 multiply-adds: kernels/cpu/conv_choice.cpp's use_winograd)
  check_runs("Conv", {2, 64, 18, 18}, random({64, 64, 3, 3}), {2, 64, 16, 16});
}

// Large enough for oneDNN's matmul (not the small-product loop): a classifier head.
TEST(PreparedCall, GemmWithConstantWeightsEveryRun) {
  check_runs("Gemm", {1, 640}, random({300, 640}), {1, 300}, random({300}));
  check_runs("Gemm", {3, 512}, random({260, 512}), {3, 260}, random({260}));
}

}  // namespace
}  // namespace porta::test
