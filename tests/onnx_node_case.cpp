#include "tests/onnx_node_case.hpp"
#include "tests/test_paths.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "porta/error.hpp"
#include "porta/op.hpp"
#include "porta/session.hpp"

namespace fs = std::filesystem;

namespace porta::test {

std::string onnx_node_cases_dir() {
  if (const char* e = std::getenv("PORTA_ONNX_NODE_CASES"); e && *e) return e;
  return std::string(PORTA_BINARY_DIR) + "/onnx_node_cases/node";
}

std::vector<std::string> list_onnx_node_cases() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(onnx_node_cases_dir(), ec))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

bool porta_has_dtype(int32_t elem_type) {
  using T = onnx::TensorProto;
  switch (elem_type) {
    case T::FLOAT: case T::FLOAT16: case T::BFLOAT16: case T::DOUBLE: case T::INT64:
    case T::INT32: case T::INT8: case T::UINT8: case T::BOOL:
      return true;
    default:
      return false;
  }
}

// Records the declared element type of a graph input/output (0 when not a tensor).
int32_t check_io(const onnx::ValueInfoProto& v, OnnxNodeCase& c) {
  if (!v.type().has_tensor_type()) {
    c.non_tensor_io = true;
    return 0;
  }
  int32_t t = v.type().tensor_type().elem_type();
  if (!porta_has_dtype(t))
    c.bad_dtypes.insert(onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(t)));
  return t;
}

bool is_onnx_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Op types of a graph and of every subgraph held in node attributes (If, Loop, Scan bodies).
void collect_ops(const onnx::GraphProto& g, OnnxNodeCase& c) {
  for (const onnx::NodeProto& n : g.node()) {
    std::string key = is_onnx_domain(n.domain()) ? n.op_type() : n.domain() + ":" + n.op_type();
    c.ops.insert(key);
    if (!find_op(is_onnx_domain(n.domain()) ? std::string() : n.domain(), n.op_type()))
      c.missing_ops.insert(key);
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) collect_ops(a.g(), c);
      for (const onnx::GraphProto& sub : a.graphs()) collect_ops(sub, c);
    }
  }
}

}  // namespace

OnnxNodeCase read_onnx_node_case(const std::string& name) {
  OnnxNodeCase c;
  c.name = name;
  c.dir = onnx_node_cases_dir() + "/" + name;
  std::ifstream f(c.dir + "/model.onnx", std::ios::binary);
  onnx::ModelProto model;
  if (!f || !model.ParseFromIstream(&f))
    throw std::runtime_error(c.dir + "/model.onnx does not parse as an ONNX ModelProto");
  for (const onnx::OperatorSetIdProto& o : model.opset_import())
    if (is_onnx_domain(o.domain())) c.opset = o.version();
  collect_ops(model.graph(), c);
  for (const onnx::ValueInfoProto& v : model.graph().input()) {
    c.input_names.push_back(v.name());
    c.input_types.push_back(check_io(v, c));
    const onnx::TypeProto_Tensor& t = v.type().tensor_type();
    Shape dims;
    for (const auto& d : t.shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    c.input_shapes.push_back(dims);
    c.input_ranked.push_back(t.has_shape());
  }
  for (const onnx::ValueInfoProto& v : model.graph().output()) c.output_types.push_back(check_io(v, c));
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(c.dir, ec))
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      c.data_sets.push_back(entry.path().string());
  std::sort(c.data_sets.begin(), c.data_sets.end());
  return c;
}

Tensor read_case_tensor(const std::string& path, int32_t declared) {
  if (declared != onnx::TensorProto::BFLOAT16) return read_tensor_proto(path);
  std::ifstream f(path, std::ios::binary);
  onnx::TensorProto t;
  if (!f || !t.ParseFromIstream(&f)) throw InvalidArgument("[test] " + path + " is not a TensorProto");
  if (t.data_type() != onnx::TensorProto::UINT16) return read_tensor_proto(path);
  Shape shape(t.dims().begin(), t.dims().end());
  std::vector<uint16_t> bits;
  if (t.has_raw_data()) {
    bits.resize(t.raw_data().size() / 2);
    std::memcpy(bits.data(), t.raw_data().data(), bits.size() * 2);  // little-endian, as ONNX
  } else {
    for (int32_t v : t.int32_data()) bits.push_back(static_cast<uint16_t>(v));
  }
  if (static_cast<int64_t>(bits.size()) != shape_numel(shape))
    throw InvalidArgument("[test] " + path + ": element count does not match its dims");
  return Tensor::from_host(bits.data(), shape, DType::bf16);
}

}  // namespace porta::test
