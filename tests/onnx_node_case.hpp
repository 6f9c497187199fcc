// porta tests — what an ONNX backend node case (onnx/backend/test/data/node/<case>/) needs
// from porta, read from its model.onnx with ONNX's own protobuf classes (before porta imports
// it, so that cases porta cannot run are skipped with the reason instead of failing).
#pragma once
#include <set>
#include <string>
#include <vector>

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
  std::vector<std::string> data_sets;    ///< test_data_set_* folders, sorted
};

/// Folder holding the generated cases: $PORTA_ONNX_NODE_CASES if set, else
/// <build>/onnx_node_cases/node (written by scripts/gen_onnx_node_cases.sh).
std::string onnx_node_cases_dir();
/// Sub-folders of onnx_node_cases_dir() that hold a model.onnx, sorted.
std::vector<std::string> list_onnx_node_cases();
/// Parses <dir>/<name>/model.onnx; throws std::runtime_error when it does not parse.
OnnxNodeCase read_onnx_node_case(const std::string& name);

}  // namespace porta::test
