// porta tests — what an ONNX backend node case (onnx/backend/test/data/node/<case>/) needs
// from porta, read from its model.onnx with ONNX's own protobuf classes (before porta imports
// it, so that cases porta cannot run are skipped with the reason instead of failing).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "porta/tensor.hpp"

namespace porta::test {

struct OnnxNodeCase {
  std::string name;               ///< folder name, e.g. "test_abs"
  std::string dir;
  int64_t opset = -1;             ///< ai.onnx opset import, -1 when the model has none
  std::set<std::string> ops;      ///< every op type, subgraphs included ("domain:Op" off ai.onnx)
  std::set<std::string> missing_ops;   ///< ops porta's registry does not have
  std::set<std::string> bad_dtypes;    ///< graph input/output element types porta lacks
  bool non_tensor_io = false;     ///< a graph input/output is a sequence, map or optional
  std::vector<std::string> input_names;  ///< graph inputs in order (input_<j>.pb is the j-th)
  std::vector<int32_t> input_types, output_types;  ///< declared onnx element types
  std::vector<Shape> input_shapes;  ///< declared input shapes, -1 for symbolic/unknown dims
  std::vector<bool> input_ranked;   ///< whether the input declares a shape at all
  std::vector<std::string> data_sets;    ///< test_data_set_* folders, sorted
};

/// Folder holding the generated cases: $PORTA_ONNX_NODE_CASES if set, else
/// <build>/onnx_node_cases/node (written by scripts/gen_onnx_node_cases.sh).
std::string onnx_node_cases_dir();
/// Sub-folders of onnx_node_cases_dir() that hold a model.onnx, sorted.
std::vector<std::string> list_onnx_node_cases();
/// Parses <dir>/<name>/model.onnx; throws std::runtime_error when it does not parse.
OnnxNodeCase read_onnx_node_case(const std::string& name);

/// Reads a case's input/output .pb whose graph declares element type `declared`. onnx 1.12's
/// generator stores BFLOAT16 data as UINT16 tensors holding the bf16 bits (numpy has no
/// bfloat16); those are read back as bf16. Everything else goes through read_tensor_proto.
Tensor read_case_tensor(const std::string& path, int32_t declared);

}  // namespace porta::test
