// porta tests — an ONNX model built node by node in memory, with the float64 reference of every
// value computed alongside (reference_op, op by op over the graph as written, before any of a
// session's rewrites): what graph rewrites and kernels of a session must reproduce.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "porta/porta.hpp"

namespace porta::test {

class ReferenceGraph {
 public:
  explicit ReferenceGraph(int opset = 17);
  ReferenceGraph(const ReferenceGraph&);
  ReferenceGraph& operator=(const ReferenceGraph&) = delete;
  ~ReferenceGraph();

  /// A graph input fed `value` (f32).
  void input(const std::string& name, const Tensor& value);
  /// The same with its first dimension declared symbolic (`dim_param`), so a session takes
  /// other sizes there too (a new plan each).
  void input(const std::string& name, const Tensor& value, const std::string& dim_param);
  /// An initializer (f32, i64 or bool).
  void initializer(const std::string& name, const Tensor& value);
  /// A Constant node whose `value` attribute is `value` (f32, i64 or bool).
  void constant(const std::string& name, const Tensor& value);
  /// A node of the ONNX domain writing `output`, with attributes of kinds Int, Float, String and
  /// Ints; "" names an absent optional input. Returns the output's reference (f64).
  const Tensor& node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                     const Attributes& attrs = {});
  /// The same with several outputs ("" names an absent optional output).
  void node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
            const Attributes& attrs = {});
  /// Declares `name` a graph output.
  void output(const std::string& name);

  Model model() const;
  /// The values of the graph inputs, by name.
  const std::map<std::string, Tensor>& inputs() const { return inputs_; }
  /// The reference of a value: f64 for floats, as given for integers.
  const Tensor& reference(const std::string& name) const { return refs_.at(name); }

 private:
  struct Proto;
  std::unique_ptr<Proto> proto_;
  std::map<std::string, Tensor> inputs_, refs_;
  int counter_ = 0;
};

/// The node plans and the results of `g`'s model in one session; each output is compared with
/// its reference (relative tolerance 1e-5) in both that session and one with PORTA_FUSE=0.
struct ReferenceRun {
  std::vector<NodePlan> plan;
  std::vector<Tensor> outputs;
};
ReferenceRun run_against_reference(const ReferenceGraph& g, const std::vector<std::string>& outputs);

/// The plan of `g`'s model in a session on `device`, whose output "out" is compared with its
/// reference (relative `tolerance`) on `runs` runs (the second reuses what the first prepared).
std::vector<NodePlan> plan_and_check_on(const ReferenceGraph& g, Device device, double tolerance = 1e-5, int runs = 2);

/// How many nodes of op `op` a plan runs.
int nodes_of_op(const std::vector<NodePlan>& plan, const std::string& op);

/// The cpu implementation the plan names for the first node whose name or op is `node_or_op`:
/// the `impl` of "cpu kernel 'impl'" in its reason, "" when it runs no cpu kernel.
std::string cpu_impl_of(const std::vector<NodePlan>& plan, const std::string& node_or_op);

}  // namespace porta::test
