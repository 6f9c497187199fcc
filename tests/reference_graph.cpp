// porta tests — ReferenceGraph (reference_graph.hpp).
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include "tests/reference_graph.hpp"

#include <onnx/onnx_pb.h>

#include "tests/onnx_graph_builder.hpp"
#include "tests/test_util.hpp"

namespace porta::test {

struct ReferenceGraph::Proto {
  onnx::ModelProto model;
};

namespace {

void declare(onnx::ValueInfoProto* v, const std::string& name, const Shape& dims) {
  OnnxGraph::declare(v, name, dims);  // tests/onnx_graph_builder.hpp
}

void fill(onnx::TensorProto* t, const Tensor& value) {
  for (int64_t d : value.shape()) t->add_dims(d);
  std::vector<double> v = value.to_doubles();
  if (value.dtype() == DType::i64) {
    t->set_data_type(onnx::TensorProto::INT64);
    for (double x : v) t->add_int64_data(static_cast<int64_t>(x));
  } else if (value.dtype() == DType::f32) {
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (double x : v) t->add_float_data(static_cast<float>(x));
  } else if (value.dtype() == DType::boolean) {
    t->set_data_type(onnx::TensorProto::BOOL);
    for (double x : v) t->add_int32_data(x != 0.0);
  } else {
    ADD_FAILURE() << "ReferenceGraph takes f32, i64 and bool tensors, got " << dtype_name(value.dtype());
  }
}

// Floats are kept as f64 references; integers as they are.
Tensor as_reference(const Tensor& t) { return t.dtype() == DType::f32 ? t.cast(DType::f64) : t; }

}  // namespace

ReferenceGraph::ReferenceGraph(int opset) : proto_(std::make_unique<Proto>()) {
  proto_->model.set_ir_version(8);
  proto_->model.add_opset_import()->set_version(opset);
  proto_->model.mutable_graph()->set_name("reference_graph");
}
ReferenceGraph::ReferenceGraph(const ReferenceGraph& o)
    : proto_(std::make_unique<Proto>(*o.proto_)), inputs_(o.inputs_), refs_(o.refs_), counter_(o.counter_) {}
ReferenceGraph::~ReferenceGraph() = default;

void ReferenceGraph::input(const std::string& name, const Tensor& value) {
  declare(proto_->model.mutable_graph()->add_input(), name, value.shape());
  inputs_[name] = value;
  refs_[name] = as_reference(value);
}

void ReferenceGraph::input(const std::string& name, const Tensor& value, const std::string& dim_param) {
  onnx::ValueInfoProto* v = proto_->model.mutable_graph()->add_input();
  declare(v, name, value.shape());
  v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param(dim_param);
  inputs_[name] = value;
  refs_[name] = as_reference(value);
}

void ReferenceGraph::initializer(const std::string& name, const Tensor& value) {
  onnx::TensorProto* t = proto_->model.mutable_graph()->add_initializer();
  t->set_name(name);
  fill(t, value);
  refs_[name] = as_reference(value);
}

void ReferenceGraph::constant(const std::string& name, const Tensor& value) {
  onnx::NodeProto* n = proto_->model.mutable_graph()->add_node();
  n->set_op_type("Constant");
  n->set_name(str("Constant_", counter_++));
  n->add_output(name);
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  fill(a->mutable_t(), value);
  refs_[name] = as_reference(value);
}

const Tensor& ReferenceGraph::node(const std::string& op, const std::vector<std::string>& inputs,
                                   const std::string& output, const Attributes& attrs) {
  node(op, inputs, std::vector<std::string>{output}, attrs);
  return refs_[output];
}

void ReferenceGraph::node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const Attributes& attrs) {
  onnx::NodeProto* n = proto_->model.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(str(op, "_", counter_++));
  std::vector<Tensor> in;
  for (const std::string& i : inputs) {
    n->add_input(i);
    in.push_back(i.empty() ? Tensor() : refs_.at(i));
  }
  for (const std::string& o : outputs) n->add_output(o);
  for (const auto& [name, value] : attrs.items()) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    if (auto* i = std::get_if<int64_t>(&value)) {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(*i);
    } else if (auto* f = std::get_if<double>(&value)) {
      a->set_type(onnx::AttributeProto::FLOAT);
      a->set_f(static_cast<float>(*f));
    } else if (auto* s = std::get_if<std::string>(&value)) {
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(*s);
    } else if (auto* v = std::get_if<std::vector<int64_t>>(&value)) {
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : *v) a->add_ints(x);
    } else {
      ADD_FAILURE() << "ReferenceGraph: attribute " << name << " is not an Int, Float, String or Ints";
    }
  }
  std::vector<Tensor> refs = reference_op(op, in, attrs, static_cast<int>(outputs.size()));
  for (size_t k = 0; k < outputs.size(); ++k)
    if (!outputs[k].empty()) refs_[outputs[k]] = refs.at(k);
}

void ReferenceGraph::output(const std::string& name) {
  declare(proto_->model.mutable_graph()->add_output(), name, refs_.at(name).shape());
}

Model ReferenceGraph::model() const {
  std::string bytes = proto_->model.SerializeAsString();
  return Model::from_bytes(bytes.data(), bytes.size());
}

ReferenceRun run_against_reference(const ReferenceGraph& g, const std::vector<std::string>& outputs) {
  ReferenceRun r;
  Model model = g.model();
  Session session(model);
  r.plan = session.plan(g.inputs());
  r.outputs = session.run(g.inputs());
  std::vector<Tensor> again = session.run(g.inputs());  // prepared calls on the second run
  std::vector<Tensor> plain;
  {
    FuseSetting off("0");
    plain = Session(model).run(g.inputs());
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    for (const Tensor* t : {&r.outputs.at(k), &again.at(k), &plain.at(k)}) {
      Comparison c = compare(*t, g.reference(outputs[k]), 1e-5);
      EXPECT_TRUE(c.ok) << outputs[k] << ": " << c.message;
    }
  return r;
}

std::vector<NodePlan> plan_and_check_on(const ReferenceGraph& g, Device device, double tolerance, int runs) {
  SessionOptions o;
  o.device = device;
  Session s(g.model(), o);
  std::vector<NodePlan> plan = s.plan(g.inputs());
  for (int run = 0; run < runs; ++run) {
    Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), tolerance);
    EXPECT_TRUE(c.ok) << "run " << run << " on " << device.str() << ": " << c.message;
  }
  return plan;
}

int nodes_of_op(const std::vector<NodePlan>& plan, const std::string& op) {
  int n = 0;
  for (const NodePlan& p : plan) n += p.op == op;
  return n;
}

std::string cpu_impl_of(const std::vector<NodePlan>& plan, const std::string& node_or_op) {
  for (const NodePlan& p : plan)
    if (p.node == node_or_op || p.op == node_or_op) {
      const size_t at = p.reason.find("cpu kernel '");
      if (at == std::string::npos) return "";
      const size_t from = at + 12;
      return p.reason.substr(from, p.reason.find('\'', from) - from);
    }
  return "";
}

}  // namespace porta::test
