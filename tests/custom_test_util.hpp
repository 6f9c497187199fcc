// porta tests — helpers for the custom-op tests: disabling kernels for a scope, and one-node
// models built directly as graphs (no ONNX file).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "porta/porta.hpp"
#include "runtime/graph.hpp"
#include "runtime/registry.hpp"

namespace porta::test {

/// Sets PORTA_DISABLE_KERNELS for its lifetime (and reloads the registry), restoring the
/// previous value afterwards.
class DisabledKernels {
 public:
  explicit DisabledKernels(const std::string& list);
  ~DisabledKernels();
  DisabledKernels(const DisabledKernels&) = delete;
  DisabledKernels& operator=(const DisabledKernels&) = delete;

 private:
  bool had_ = false;
  std::string previous_;
};

/// "cpu:RmsNorm" style entry for a device's backend.
std::string kernel_key(Device device, const std::string& op);

/// A model with one node of `op`: every defined entry of `inputs` becomes a graph input
/// named in0, in1, ... (undefined = absent optional input); one output named "out".
Model single_node_model(const std::string& op, const std::vector<Tensor>& inputs, const Attributes& attrs);

/// Named inputs for single_node_model.
std::map<std::string, Tensor> single_node_inputs(const std::vector<Tensor>& inputs);

}  // namespace porta::test
