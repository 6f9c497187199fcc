// porta — loading ONNX models and running them on a device.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "porta/tensor.hpp"

namespace porta {

struct Graph;  // runtime-internal IR

/// Description of a graph input or output; dimensions < 0 are dynamic.
struct ValueDesc {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::string> dim_names;  ///< symbolic names of dynamic dimensions ("" if none)
  bool rank_known = true;              ///< false when the file declares no shape at all
};

/// An imported model (immutable, shareable between sessions).
class Model {
 public:
  /// Loads an ONNX file; external data is resolved inside the file's folder only.
  /// Throws InvalidModel / Unsupported with what is wrong.
  static Model load(const std::string& path);
  /// Parses an in-memory ONNX model; `base_dir` is where external data may be looked up
  /// ("" = external data refused).
  static Model from_bytes(const void* data, size_t size, const std::string& base_dir = "");
  /// Wraps an already-built graph.
  explicit Model(std::shared_ptr<const Graph> graph);

  const std::vector<ValueDesc>& inputs() const;
  const std::vector<ValueDesc>& outputs() const;
  const Graph& graph() const { return *graph_; }
  std::shared_ptr<const Graph> graph_ptr() const { return graph_; }

 private:
  std::shared_ptr<const Graph> graph_;
};

/// Reads a serialized ONNX TensorProto file (as in ONNX's test data sets) into a cpu tensor.
Tensor read_tensor_proto(const std::string& path);

/// The float format a session computes a model's f32 work in (docs/ARCHITECTURE.md,
/// "Compute precision"): MatMul and Gemm take the low format with f32 accumulation, the
/// numerically sensitive ops stay in f32, graph outputs keep their exported dtype.
enum class Precision : uint8_t {
  f32,        ///< as exported: the graph is compiled unchanged
  bf16,
  f16,
  automatic,  ///< "auto": the fastest format the device declares (Capabilities::fast_dtypes), else f32
};
/// "f32", "bf16", "f16", "auto".
std::string_view precision_name(Precision p);
/// Inverse of precision_name; throws InvalidArgument naming the accepted values.
Precision parse_precision(std::string_view name);

struct SessionOptions {
  Device device = Device::cpu();
  bool strict = false;   ///< refuse CPU fallback
  bool profile = false;  ///< time every node
  /// Keep every value that a graph node computes (not only the graph outputs) after each run,
  /// readable with Session::values(); such values get their own buffers instead of pooled
  /// ones, so this costs memory. For debugging and `porta check`.
  bool keep_values = false;
  Precision precision = Precision::f32;  ///< compute format for f32 work (see Precision)
  /// Replay device work: from a plan's third run on, a backend that keeps recorded commands
  /// (Vulkan) submits the plan's commands again instead of recording them, after copying the
  /// inputs into the tensors they read. Plans whose runs read values on the host, upload host
  /// data or run nodes on the cpu record every run, as do profiling and keep_values sessions.
  /// Memory the kept commands touch stays reserved while the plan lives. Session::replayed()
  /// says which runs replayed.
  bool replay = true;
};

/// Where one node runs and why (for `porta ops`).
struct NodePlan {
  std::string node;
  std::string op;  ///< OpSchema::qualified_name(): "Conv", "com.example::ScaledSwish"
  Device device;
  Path path = Path::native;
  std::string reason;
  size_t fallback_bytes = 0;  ///< bytes copied per run because of a CPU fallback
  /// The dtype the node computes in (its kernel's dispatch dtype; for a folded node, that of
  /// its inputs).
  DType precision = DType::f32;
  /// With a precision other than f32: why the node computes in `precision` (the policy's
  /// class for its op) and which inputs were cast or converted for it; "" otherwise.
  std::string precision_note;
};

struct NodeProfile {
  std::string node;
  std::string op;
  Device device;
  double time_us = 0;  ///< device time when the backend has timers, else host time
  /// The implementation that ran, when its op has several on that backend ("texel",
  /// "onednn"...); "" otherwise (composites and the only kernel of an op).
  std::string kernel;
};

/// Runs a model on one device. Compiles per distinct set of input shapes (cached).
/// A session may be used from one thread at a time; concurrent run() calls are refused
/// with an InvalidArgument error.
class Session {
 public:
  Session(Model model, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  /// Runs with named inputs (any device; copied as needed). Returns the graph outputs in
  /// order, on the session's device.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs);
  /// Placement of every node for the given input shapes (nothing is run).
  std::vector<NodePlan> plan(const std::map<std::string, Shape>& input_shapes);
  /// Same, for models with inputs that decide shapes (their values are needed).
  std::vector<NodePlan> plan(const std::map<std::string, Tensor>& inputs);
  /// Per-node times of the last run (with options.profile).
  const std::vector<NodeProfile>& profile() const;
  /// With options.keep_values: every value the graph's nodes computed in the last run, by
  /// ONNX value name, on the device that computed it (folded constants on cpu). Empty before
  /// the first run or without keep_values.
  std::map<std::string, Tensor> values() const;
  /// Peak bytes of intermediate buffers of the last compiled plan, per device.
  std::map<std::string, size_t> peak_memory() const;
  /// Whether the last run replayed kept device work (SessionOptions::replay), and if its plan
  /// does not, why ("" while it may still).
  bool replayed() const;
  std::string replay_blocker() const;
  const Model& model() const;
  const SessionOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace porta
