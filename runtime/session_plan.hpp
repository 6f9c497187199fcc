// porta runtime — a compiled session plan: slots (values placed on devices), steps (kernels,
// copies, views) and the buffer pool that liveness analysis assigns.
#pragma once
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "porta/session.hpp"
#include "runtime/graph.hpp"

namespace porta::detail {

/// A value materialised on one device.
struct Slot {
  Shape shape;
  DType dtype = DType::f32;
  Device device;
  Tensor constant;       ///< defined for constants (already on `device`)
  int graph_input = -1;  ///< index into the graph's inputs, or -1
  int alias_of = -1;     ///< slot whose memory this one views (reshape-like ops)
  /// With alias_of: a fixed block of that slot's memory starting `alias_offset` elements in,
  /// bound when the plan's buffers are (a Concat's input written in place); -1: a view step
  /// binds it each run.
  int64_t alias_offset = -1;
  bool graph_output = false;
  int buffer = -1;       ///< pooled buffer, or -1
  int last_use = -1;     ///< last step reading it (through aliases too)
  Tensor tensor;         ///< bound for the current run
  /// A graph output handed to the caller by the last run: the next run writes into it again
  /// once the caller holds no reference to its storage (no page faults for a fresh buffer).
  Tensor handed;
};

enum class StepKind : uint8_t { kernel, copy, view };

struct Step {
  StepKind kind = StepKind::kernel;
  std::string name;      ///< node name (composite parts: "node/part")
  std::string op;
  Device device;
  const KernelDef* kernel = nullptr;
  std::vector<int> inputs, outputs;  ///< slots; -1 for absent optional inputs/outputs
  KernelContext ctx;                 ///< prebuilt; tensors rebound each run
  uint64_t constant_inputs = 0;      ///< bit i: input i is a constant slot (see constant_inputs())
  /// Per input (or empty): the cpu slot holding input i's value for KernelContext::host_copies
  /// (the op's host_read_inputs on a device: Compiler::host_copy_slot), -1 where there is none.
  std::vector<int> host_copy_slots;
  int plan_node = -1;                ///< index into Plan::nodes for reports
  /// Runs in the host prologue: before every device step (its inputs are known on the host).
  bool prologue = false;
  /// A view step whose output is a strided view of its (contiguous) input: `view_strides`
  /// (elements, one per axis of the output) from `view_offset` elements in, rather than a
  /// reshape (Compiler::read_chains_in_place).
  bool strided_view = false;
  std::vector<int64_t> view_strides;
  int64_t view_offset = 0;
  /// With strided_view: the view is written, not read: a later step writes its output through
  /// it into the input's memory, so this step is where that memory's life starts
  /// (Compiler::write_chains_in_place).
  bool writes_through = false;
};

struct Buffer {
  Device device;
  size_t bytes = 0;
  Tensor storage;  ///< allocated on first run, reused after
};

struct Plan {
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::deque<Attributes> attrs;       ///< stable storage for steps' attribute pointers
  std::vector<int> input_slots;       ///< per graph input (on the session device)
  /// (graph input, slot) for inputs the host prologue reads: bound to the caller's tensor on
  /// the cpu (Compiler::place_on_host).
  std::vector<std::pair<int, int>> host_input_slots;
  std::vector<int> output_slots;      ///< per graph output (on the session device)
  std::vector<NodePlan> nodes;        ///< per graph node, for `porta ops`
  std::vector<Buffer> buffers;
  /// With SessionOptions::keep_values: graph node outputs by name and the slot holding each
  /// (kept out of the buffer pool), and those folded to constants when compiling.
  std::vector<std::pair<std::string, int>> kept_slots;
  std::vector<std::pair<std::string, Tensor>> kept_constants;
  bool allocated = false;
  bool weights_released = false;  ///< its first run has run (Session::run: release_if_held)
  /// (step, output index) of the kernel steps writing graph outputs, found on the first run: they
  /// drop those outputs after each run, so the caller holds the only other reference.
  std::vector<std::pair<int, int>> output_writers;
  std::shared_ptr<const Graph> graph;  ///< the graph compiled, when rewritten for these shapes
  /// Replaying the plan's device work (Session::run, SessionOptions::replay): its second run
  /// notes the signature of what it records, its third records into command buffers the
  /// backend keeps and, where it records the same work and nothing in it carries host data,
  /// later runs copy their inputs into the kept run's and submit its commands again.
  struct Replay {
    bool checked = false;     ///< `blocker` computed
    std::string blocker;      ///< why this plan is not replayed ("" while it may be)
    int runs = 0;             ///< runs of the plan so far
    int attempts = 0;         ///< kept recordings that did not match
    uint64_t signature = 0;   ///< of the last run noted (0: none to compare with)
    std::shared_ptr<void> commands;  ///< the kept run (Backend::replay)
    std::vector<Tensor> inputs;      ///< per graph input: the tensor the kept run reads
    std::vector<Tensor> outputs;     ///< per graph output: the tensor the kept run leaves it in
  } replay;
};

class PrecisionCache;  // runtime/precision.hpp

/// Compiles a plan for concrete input shapes (shape inference, folding, composites,
/// the precision policy, placement, copies, memory). Throws porta errors naming the node at
/// fault. `input_values` holds, for graph inputs that decide output shapes (see
/// shape_deciding_inputs), their host values; other entries are undefined.
/// `precision_cache` (optional) keeps the weights converted to a low precision across the
/// plans of one session; without it each plan converts its own.
std::unique_ptr<Plan> compile_plan(const Graph& graph, const SessionOptions& options,
                                   const std::vector<Shape>& input_shapes,
                                   const std::vector<Tensor>& input_values,
                                   PrecisionCache* precision_cache = nullptr);

/// Records in `graph` the shape and dtype of every value (Value::shape_known) for these input
/// shapes (and values of shape-deciding inputs), by compiling a plan that keeps every value.
/// Rewrites that depend on shapes (fuse_residual_add) run on a graph annotated so.
void annotate_shapes(Graph& graph, const std::vector<Shape>& input_shapes, const std::vector<Tensor>& input_values);

/// A tensor with the right shape and dtype but a single element of storage (zero strides):
/// lets `supports` and `layout_ok` functions inspect a call without real data.
Tensor shape_probe(const Shape& shape, DType dtype);
/// Keeps values in a private layout between steps whose kernels declare the same one
/// (KernelDef::private_layout; the contract is in plan_layouts.cpp).
void chain_private_layouts(Plan& plan);

/// Helpers of the passes over a compiled plan (runtime/session_concat.cpp). The plan's step
/// attributes, writable, by the pointers steps see them through (KernelContext::attrs is const).
std::map<const Attributes*, Attributes*> writable_attributes(Plan& plan);
/// Removes the steps marked in `drop`; the others keep their order.
void erase_steps(std::vector<Step>& steps, const std::vector<bool>& drop);

/// A channel Concat (axis 1 of an f32 tensor of rank 3-5) whose output only a
/// BatchNormalization reads, as its X, becomes part of that BatchNormalization: the
/// BatchNormalization step reads the Concat's inputs as its parts of X (input 0 and inputs
/// 5..; attribute `porta_concat`: their count) and the Concat step goes, so the joined
/// tensor is never written (DenseNet's layers: Concat, then BatchNormalization and Relu). Only
/// where the BatchNormalization's kernel declares "porta_concat" in
/// KernelDef::fused_activations, its four parameters are session constants, the Concat's output
/// is no graph output, kept value, view or viewed, and both steps keep their operands in one
/// layout (all in the kernel's private layout, or all plain). Runs after chain_private_layouts;
/// not with keep_values, nor with PORTA_FUSE=0 (runtime/session_concat.cpp).
void concat_into_batch_norm(Plan& plan);

/// Graph inputs (indices) whose values decide shapes somewhere (a Reshape's shape fed by
/// the caller, a Range limit...). Plans are specialised on their values.
std::vector<bool> shape_deciding_inputs(const Graph& graph);
/// The same over all graph values: those whose contents decide a shape somewhere.
std::vector<bool> shape_deciding_values(const Graph& graph);
/// Graph values a device kernel reads on the host (OpSchema::host_read_inputs), and those
/// they are computed from.
std::vector<bool> host_read_values(const Graph& graph);

}  // namespace porta::detail
