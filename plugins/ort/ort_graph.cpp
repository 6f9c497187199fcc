// plugins/ort — OrtGraph to ONNX protobuf (see ort_graph.hpp).
#include "ort_graph.hpp"

#include <set>

#include "porta/util.hpp"

namespace porta_ort {

std::string value_name(const OrtValueInfo* v) {
  const char* name = nullptr;
  check(api().GetValueInfoName(v, &name));
  return name ? name : "";
}

ValueType value_type(const OrtValueInfo* v) {
  ValueType out;
  const OrtTypeInfo* type = nullptr;
  check(api().GetValueInfoTypeInfo(v, &type));
  const OrtTensorTypeAndShapeInfo* info = nullptr;
  if (!type) return out;
  check(api().CastTypeInfoToTensorInfo(type, &info));
  if (!info) return out;  // a sequence, map or optional value
  out.is_tensor = true;
  Ort::ConstTensorTypeAndShapeInfo ti(info);
  out.elem = ti.GetElementType();
  size_t rank = ti.GetDimensionsCount();
  out.rank_known = api().TensorTypeAndShape_HasShape(info);  // else GetShape() is {} as for a scalar
  if (!out.rank_known) return out;
  out.dims = ti.GetShape();
  std::vector<const char*> names(rank, nullptr);
  if (rank) ti.GetSymbolicDimensions(names.data(), rank);
  for (size_t i = 0; i < rank; ++i) out.dim_names.push_back(names[i] ? names[i] : "");
  return out;
}

std::vector<const OrtNode*> graph_nodes(const OrtGraph* g) {
  size_t n = 0;
  check(api().Graph_GetNumNodes(g, &n));
  std::vector<const OrtNode*> nodes(n);
  if (n) check(api().Graph_GetNodes(g, nodes.data(), n));
  return nodes;
}

std::vector<const OrtValueInfo*> node_inputs(const OrtNode* node) {
  size_t n = 0;
  check(api().Node_GetNumInputs(node, &n));
  std::vector<const OrtValueInfo*> v(n);
  if (n) check(api().Node_GetInputs(node, v.data(), n));
  return v;
}

std::vector<const OrtValueInfo*> node_outputs(const OrtNode* node) {
  size_t n = 0;
  check(api().Node_GetNumOutputs(node, &n));
  std::vector<const OrtValueInfo*> v(n);
  if (n) check(api().Node_GetOutputs(node, v.data(), n));
  return v;
}

std::string node_name(const OrtNode* n) {
  const char* s = nullptr;
  check(api().Node_GetName(n, &s));
  return s ? s : "";
}
std::string node_op(const OrtNode* n) {
  const char* s = nullptr;
  check(api().Node_GetOperatorType(n, &s));
  return s ? s : "";
}
std::string node_domain(const OrtNode* n) {
  const char* s = nullptr;
  check(api().Node_GetDomain(n, &s));
  return s ? s : "";
}

bool node_has_subgraphs(const OrtNode* n) {
  size_t k = 0;
  check(api().Node_GetNumSubgraphs(n, &k));
  return k > 0;
}

namespace {

void declare(onnx::ValueInfoProto* p, const OrtValueInfo* v) {
  p->set_name(value_name(v));
  ValueType t = value_type(v);
  if (!t.is_tensor)
    throw porta::Unsupported(porta::str("[porta_ort] value '", p->name(), "' is not a tensor"));
  onnx::TypeProto_Tensor* tt = p->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(t.elem));  // ORT's element type numbers are ONNX's
  if (!t.rank_known) return;  // no shape at all: porta learns it from the run's inputs
  onnx::TensorShapeProto* shape = tt->mutable_shape();
  for (size_t i = 0; i < t.dims.size(); ++i) {
    onnx::TensorShapeProto_Dimension* d = shape->add_dim();
    if (t.dims[i] >= 0)
      d->set_dim_value(t.dims[i]);
    else if (!t.dim_names[i].empty())
      d->set_dim_param(t.dim_names[i]);
  }
}

/// The contents of a tensor OrtValue as a TensorProto (raw data).
void tensor_proto(const OrtValue* value, const std::string& name, onnx::TensorProto* t) {
  Ort::ConstValue v(value);
  auto info = v.GetTensorTypeAndShapeInfo();
  t->set_name(name);
  t->set_data_type(static_cast<int>(info.GetElementType()));
  for (int64_t d : info.GetShape()) t->add_dims(d);
  porta::DType dt = to_porta(info.GetElementType());
  size_t bytes = info.GetElementCount() * porta::dtype_size(dt);
  t->set_raw_data(static_cast<const char*>(v.GetTensorRawData()), bytes);
}

void read_attribute(const OrtOpAttr* attr, onnx::AttributeProto* p) {
  const OrtApi& a = api();
  const char* name = nullptr;
  check(a.OpAttr_GetName(attr, &name));
  p->set_name(name);
  OrtOpAttrType type = ORT_OP_ATTR_UNDEFINED;
  check(a.OpAttr_GetType(attr, &type));
  size_t len = 0;
  auto size_of = [&](OrtOpAttrType t) {
    if (OrtStatus* s = a.ReadOpAttr(attr, t, nullptr, 0, &len)) a.ReleaseStatus(s);  // sizing call
    return len;
  };
  switch (type) {
    case ORT_OP_ATTR_INT: {
      int64_t v = 0;
      check(a.ReadOpAttr(attr, type, &v, sizeof v, &len));
      p->set_type(onnx::AttributeProto::INT);
      p->set_i(v);
      break;
    }
    case ORT_OP_ATTR_FLOAT: {
      float v = 0;
      check(a.ReadOpAttr(attr, type, &v, sizeof v, &len));
      p->set_type(onnx::AttributeProto::FLOAT);
      p->set_f(v);
      break;
    }
    case ORT_OP_ATTR_INTS: {
      std::vector<int64_t> v(size_of(type) / sizeof(int64_t));
      if (!v.empty()) check(a.ReadOpAttr(attr, type, v.data(), v.size() * sizeof(int64_t), &len));
      p->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : v) p->add_ints(x);
      break;
    }
    case ORT_OP_ATTR_FLOATS: {
      std::vector<float> v(size_of(type) / sizeof(float));
      if (!v.empty()) check(a.ReadOpAttr(attr, type, v.data(), v.size() * sizeof(float), &len));
      p->set_type(onnx::AttributeProto::FLOATS);
      for (float x : v) p->add_floats(x);
      break;
    }
    case ORT_OP_ATTR_STRING: {
      std::string v(size_of(type), '\0');
      if (!v.empty()) check(a.ReadOpAttr(attr, type, v.data(), v.size(), &len));
      if (!v.empty() && v.back() == '\0') v.pop_back();  // the size counts the terminator
      p->set_type(onnx::AttributeProto::STRING);
      p->set_s(v);
      break;
    }
    case ORT_OP_ATTR_STRINGS: {
      std::string v(size_of(type), '\0');  // the strings, each ended by '\0'
      if (!v.empty()) check(a.ReadOpAttr(attr, type, v.data(), v.size(), &len));
      p->set_type(onnx::AttributeProto::STRINGS);
      size_t start = 0;
      for (size_t i = 0; i < v.size(); ++i)
        if (v[i] == '\0') {
          p->add_strings(v.substr(start, i - start));
          start = i + 1;
        }
      break;
    }
    case ORT_OP_ATTR_TENSOR: {
      OrtValue* value = nullptr;
      check(a.OpAttr_GetTensorAttributeAsOrtValue(attr, &value));
      Ort::Value owner(value);
      p->set_type(onnx::AttributeProto::TENSOR);
      tensor_proto(value, "", p->mutable_t());
      break;
    }
    default:
      throw porta::Unsupported(porta::str("[porta_ort] attribute '", name, "' has a type porta does not read (",
                                          static_cast<int>(type), ")"));
  }
}

}  // namespace

onnx::ModelProto graph_to_model(const OrtGraph* graph, const std::vector<const OrtValueInfo*>& inputs,
                                const std::vector<const OrtValueInfo*>& outputs) {
  const OrtApi& a = api();
  onnx::ModelProto m;
  int64_t ir = 0;
  check(a.Graph_GetOnnxIRVersion(graph, &ir));
  m.set_ir_version(ir > 0 ? ir : 8);
  size_t n_sets = 0;
  check(a.Graph_GetNumOperatorSets(graph, &n_sets));
  std::vector<const char*> domains(n_sets);
  std::vector<int64_t> versions(n_sets);
  if (n_sets) check(a.Graph_GetOperatorSets(graph, domains.data(), versions.data(), n_sets));
  for (size_t i = 0; i < n_sets; ++i) {
    onnx::OperatorSetIdProto* o = m.add_opset_import();
    o->set_domain(domains[i]);
    o->set_version(versions[i]);
  }
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("porta_ort_subgraph");
  std::set<std::string> input_names;
  for (const OrtValueInfo* v : inputs) {
    declare(g->add_input(), v);
    input_names.insert(value_name(v));
  }
  for (const OrtValueInfo* v : outputs) declare(g->add_output(), v);

  // Constant initializers the nodes read (those ORT passes as inputs are graph inputs above).
  size_t n_init = 0;
  check(a.Graph_GetNumInitializers(graph, &n_init));
  std::vector<const OrtValueInfo*> inits(n_init);
  if (n_init) check(a.Graph_GetInitializers(graph, inits.data(), n_init));
  for (const OrtValueInfo* v : inits) {
    std::string name = value_name(v);
    if (input_names.count(name)) continue;
    const OrtValue* value = nullptr;
    check(a.ValueInfo_GetInitializerValue(v, &value));
    if (!value) throw porta::InvalidModel(porta::str("[porta_ort] initializer '", name, "' has no value"));
    tensor_proto(value, name, g->add_initializer());
  }

  for (const OrtNode* node : graph_nodes(graph)) {
    onnx::NodeProto* p = g->add_node();
    p->set_name(node_name(node));
    p->set_op_type(node_op(node));
    p->set_domain(node_domain(node));
    for (const OrtValueInfo* v : node_inputs(node)) p->add_input(v ? value_name(v) : "");
    for (const OrtValueInfo* v : node_outputs(node)) p->add_output(v ? value_name(v) : "");
    size_t n_attr = 0;
    check(a.Node_GetNumAttributes(node, &n_attr));
    std::vector<const OrtOpAttr*> attrs(n_attr);
    if (n_attr) check(a.Node_GetAttributes(node, attrs.data(), n_attr));
    for (const OrtOpAttr* attr : attrs) read_attribute(attr, p->add_attribute());
  }
  return m;
}

}  // namespace porta_ort
