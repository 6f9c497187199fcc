// porta runtime — the session compiler's internals, shared by its two files:
// runtime/session_compile.cpp (values, resolution, copies, memory) and
// runtime/session_compile_precision.cpp (the precision policy's casts and lowering).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "porta/op.hpp"
#include "porta/session.hpp"
#include "porta/util.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/precision.hpp"
#include "runtime/session_plan.hpp"

namespace porta::detail::compiling {

// A value while compiling: graph values first, then those composites create.
struct CValue {
  Shape shape;
  DType dtype = DType::f32;
  bool present = true;
  Tensor constant;              // host value when known at compile time
  bool from_input = false;      // known only because a graph input's value decides shapes
  int home = -1;                // slot holding it at run time
  std::map<Device, int> on;     // slots by device (home and copies)
  int origin = -1;              // Plan::nodes index of the node that produced it
  bool weight = false;          // a constant of the graph (converted once per session)
  bool lowered = false;         // computed in the session's low format in place of f32
  std::map<DType, int> twins;   // this value in other dtypes (one Cast or conversion each)
  // Known on the host before the device's work starts: a graph input (the caller's host
  // tensor), or an output of a node placed in the host prologue (place_on_host).
  bool host_side = false;
  // A float host-side value computed from index and mask values and scalar constants alone
  // (an attention mask scaled or shifted): other prologue nodes may read it (place_on_host).
  bool mask_like = false;
  int graph_input = -1;         // index into the graph's inputs, or -1
};


class Compiler;

// ONNX TensorProto code (Cast's `to`) of a format the planner casts between.
int64_t onnx_dtype_code(DType t);

// Emits composite parts as further nodes of the plan.
class PlanBuilder final : public GraphBuilder {
 public:
  PlanBuilder(Compiler& c, std::string prefix, int plan_node)
      : c_(c), prefix_(std::move(prefix)), plan_node_(plan_node) {}
  std::vector<ValueId> add(std::string_view op, std::vector<ValueId> inputs, Attributes attrs,
                           int num_outputs) override;
  ValueId constant(const Tensor& value) override;
  const Shape& shape(ValueId v) const override;
  DType dtype(ValueId v) const override;

 private:
  Compiler& c_;
  std::string prefix_;
  int plan_node_;
  int counter_ = 0;
};

class Compiler {
 public:
  Compiler(const Graph& g, const SessionOptions& o, PrecisionCache* cache)
      : graph_(g), options_(o), plan_(std::make_unique<Plan>()), cache_(cache) {}

  std::unique_ptr<Plan> run(const std::vector<Shape>& input_shapes,
                            const std::vector<Tensor>& input_values);

  // Processes one node (graph node or composite part): the precision policy, then
  // process_node.
  void process(const OpSchema& op, const Attributes& attrs, const std::vector<int>& ins,
               const std::vector<int>& outs, const std::string& name, int plan_node, int depth);

  int new_value() {
    values_.emplace_back();
    return static_cast<int>(values_.size() - 1);
  }
  CValue& value(int v) { return values_.at(v); }

 private:
  int new_slot(const Shape& shape, DType dtype, Device device) {
    Slot s;
    s.shape = shape;
    s.dtype = dtype;
    s.device = device;
    plan_->slots.push_back(std::move(s));
    return static_cast<int>(plan_->slots.size() - 1);
  }
  int slot_on(int v, Device device, int plan_node);
  int host_copy_slot(int v, int plan_node);
  /// Graph input `cv` bound to the caller's tensor on the cpu (a slot of its own, no copy from
  /// the device), unless it has a cpu slot already.
  void bind_input_on_host(CValue& cv);
  void emit_kernel(const OpSchema& op, const Attributes& attrs, const KernelDef* kernel,
                   Device device, const std::vector<int>& ins, const std::vector<int>& outs,
                   const std::string& name, int plan_node);
  void process_node(const OpSchema& op, const Attributes& attrs, const std::vector<int>& ins,
                    const std::vector<int>& outs, const std::string& name, int plan_node, int depth);
  // What the precision policy does with a node: nothing (f32), its low-format twins of inputs
  // (low), or the kernel converts (inside: KernelDef::computes_in).
  enum class Lowering : uint8_t { f32, low, inside };
  Lowering apply_precision(const OpSchema& op, const Attributes& attrs, std::vector<int>& ins, int plan_node,
                           std::string& note);
  bool wants_f32_destination(const OpSchema& op, const std::vector<int>& outs) const;
  bool computes_inside(const OpSchema& op) const;
  int twin(int v, DType to, int plan_node);
  std::string value_label(int v) const {
    return v < static_cast<int>(graph_.values.size()) ? graph_.values[v].name : str("%", v);
  }
  void plan_memory();
  void note_constant_bytes();
  void keep_node_values();
  void drop_unread_steps();
  // Whether a node runs in the host prologue (prologue_rule over the compiler's values).
  PrologueRule place_on_host(const std::vector<ValueInfo>& infos, const std::vector<ValueInfo>& out_infos,
                             const std::vector<int>& ins) const;
  void host_prologue_first();
  size_t view_alignment() const;
  void concat_prefixes_in_place();
  void concat_in_place();
  void slice_in_place();
  void merge_movement_chains();  // runtime/session_moves.cpp
  void read_chains_in_place();   // runtime/session_moves.cpp
  void write_chains_in_place();  // runtime/session_moves.cpp

  const Graph& graph_;
  const SessionOptions& options_;
  std::unique_ptr<Plan> plan_;
  std::vector<CValue> values_;
  std::vector<bool> host_needed_;  // graph values whose contents decide shapes
  std::vector<bool> host_read_needed_;  // graph values device kernels read on the host (host_read_values)
  PrecisionCache* cache_ = nullptr;  // weights in the low format, kept by the session
  DType low_ = DType::f32;           // the session's compute format for f32 work
  std::string low_slow_;             // why low_ is not among the device's fast formats ("" when it is)
  std::string low_in_f32_;           // why the device computes low_ products in f32 ("" when it does not)
  std::vector<bool> read_low_;       // graph values some lower or follow node reads
  bool f32_destination_ = false;     // for the next process_node: write f32 from low inputs
  friend class PlanBuilder;
};


}  // namespace porta::detail::compiling
