// porta tests — building small ONNX models in memory (float tensors, scalar Constant nodes,
// float attributes), for tests of graph rewrites.
#pragma once
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "porta/porta.hpp"
#include "porta/util.hpp"

namespace porta::test {

/// An ONNX model under construction: every value declared without dims gets `shape`.
struct OnnxGraph {
  onnx::ModelProto m;
  onnx::GraphProto* g;
  Shape shape;
  int counter = 0;

  /// `extra_domain`: a further opset (version 1) the model imports, for a test's own ops.
  explicit OnnxGraph(int opset = 17, Shape default_shape = {}, const std::string& extra_domain = "")
      : shape(std::move(default_shape)) {
    m.set_ir_version(8);
    m.add_opset_import()->set_version(opset);
    if (!extra_domain.empty()) {
      onnx::OperatorSetIdProto* d = m.add_opset_import();
      d->set_domain(extra_domain);
      d->set_version(1);
    }
    g = m.mutable_graph();
    g->set_name("test_graph");
  }
  static void declare(onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
    v->set_name(name);
    onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void input(const std::string& name) { declare(g->add_input(), name, shape); }
  void input(const std::string& name, const Shape& dims) { declare(g->add_input(), name, dims); }
  void output(const std::string& name) { declare(g->add_output(), name, shape); }
  void output(const std::string& name, const Shape& dims) { declare(g->add_output(), name, dims); }
  void initializer(const std::string& name, const Shape& dims, const std::vector<float>& values) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                        const std::string& domain = "") {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(str(op, "_", counter++));
    if (!domain.empty()) n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }
  static void attr(onnx::NodeProto* n, const std::string& name, float v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  /// A Constant node holding a scalar float, as `value` (a tensor) or `value_float`.
  void constant(const std::string& name, float v, bool as_tensor) {
    onnx::NodeProto* n = node("Constant", {}, name);
    onnx::AttributeProto* a = n->add_attribute();
    if (as_tensor) {
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
      a->mutable_t()->add_float_data(v);
    } else {
      a->set_name("value_float");
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(v);
    }
  }
  Model model() const {
    std::string bytes = m.SerializeAsString();
    return Model::from_bytes(bytes.data(), bytes.size());
  }
};

}  // namespace porta::test
