// porta runtime — the graph IR that ONNX import builds and sessions compile.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "porta/op.hpp"
#include "porta/session.hpp"

namespace porta {

struct Value {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;                 ///< dims < 0 are unknown until inputs are bound
  bool shape_known = false;    ///< shape/dtype filled by load-time inference
  Tensor constant;             ///< defined for initializers and folded constants (cpu)
  /// Annotated graphs only (detail::annotate_shapes): the value a plan's constant folding
  /// computed for it (shape arithmetic such as swin's head-size scale), when it has at most
  /// 16 elements; the node producing it stays.
  Tensor folded;
  /// Annotated graphs only: the plan's constant folding computes this value (any size).
  bool plan_constant = false;
  int producer = -1;           ///< node index, -1 for graph inputs and constants
};

struct Node {
  std::string name;
  const OpSchema* op = nullptr;
  std::vector<int> inputs;   ///< value ids, -1 for an absent optional input
  std::vector<int> outputs;  ///< value ids, -1 for an unused optional output
  Attributes attrs;          ///< complete (defaults filled in)
};

struct Graph {
  std::vector<Value> values;
  std::vector<Node> nodes;   ///< in topological order after import
  std::vector<int> inputs;   ///< graph input value ids (not initializers)
  std::vector<int> outputs;
  std::vector<ValueDesc> input_descs, output_descs;
  std::unordered_map<std::string, int> by_name;
  int opset = 17;

  int add_value(std::string name);
  /// Value id by name, or -1.
  int find(const std::string& name) const;
};

/// Orders nodes so every value is produced before use; throws InvalidModel naming a cycle
/// or a value nothing produces.
void topological_sort(Graph& graph);

}  // namespace porta
