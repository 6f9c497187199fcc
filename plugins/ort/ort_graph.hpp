// plugins/ort — reading ONNX Runtime's graph API (OrtGraph, OrtNode, OrtValueInfo) into ONNX
// protobuf, so a subgraph ORT hands the execution provider becomes a porta Model.
#pragma once
#define ONNX_ML 1
#define ONNX_NAMESPACE onnx
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "ort_common.hpp"

namespace porta_ort {

/// Element type and dimensions of a value (symbolic dims as their names, unknown as "").
struct ValueType {
  ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  bool is_tensor = false;
  bool rank_known = false;  ///< false: ORT knows nothing of the shape (dims empty)
  std::vector<int64_t> dims;
  std::vector<std::string> dim_names;
};

std::string value_name(const OrtValueInfo* v);
ValueType value_type(const OrtValueInfo* v);

std::vector<const OrtNode*> graph_nodes(const OrtGraph* g);
std::vector<const OrtValueInfo*> node_inputs(const OrtNode* n);   ///< nullptr for absent optional inputs
std::vector<const OrtValueInfo*> node_outputs(const OrtNode* n);  ///< nullptr for absent optional outputs
std::string node_name(const OrtNode* n);
std::string node_op(const OrtNode* n);
std::string node_domain(const OrtNode* n);
/// Whether the node carries a graph attribute (If, Loop, Scan): never claimed.
bool node_has_subgraphs(const OrtNode* n);

/// An ONNX model of `graph` (a subgraph view ORT passes to Compile) whose inputs are
/// `inputs` and outputs `outputs` (the fused node's, in its order); constant initializers the
/// nodes use are embedded. Throws porta::Error naming what cannot be expressed.
onnx::ModelProto graph_to_model(const OrtGraph* graph, const std::vector<const OrtValueInfo*>& inputs,
                                const std::vector<const OrtValueInfo*>& outputs);

}  // namespace porta_ort
