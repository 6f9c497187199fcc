// porta runtime — one op call prepared for benchmarking: inputs from a case, its work counted
// from shapes, and a run() that can be repeated without re-allocating outputs.
//
// Used by `porta bench` (tools/cmd_bench*.cpp) and its tests. Not part of the public API.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"

namespace porta::bench {

/// Host tensor for one case input, in `dtype` (the case's dtype unless the spec fixes one).
/// Deterministic for a given seed, so every device of a run sees the same values. Absent
/// inputs give an undefined tensor.
Tensor make_case_input(const InputSpec& spec, DType case_dtype, uint64_t seed);

/// Work of one call, from shapes only: FLOPs from the op's `flops` (0 when the op has none, as
/// for data movement) and bytes = sum of the input and output bytes (each read or written once).
struct WorkCount {
  double flops = 0;
  double bytes = 0;
};
WorkCount count_work(const OpSchema& op, const std::vector<Tensor>& inputs, const Attributes& attrs,
                     int num_outputs = -1);
/// The same from shapes and dtypes alone (no tensors needed).
WorkCount count_work(const OpSchema& op, const std::vector<Shape>& input_shapes,
                     const std::vector<DType>& input_dtypes, const Attributes& attrs,
                     int num_outputs = -1);

/// A call of one op on one device, resolved once. A native call reuses its outputs on every
/// run() (allocation is not timed); composite and fallback calls go through the eager path
/// (their intermediates and copies are part of what they cost).
class PreparedCall {
 public:
  /// `inputs` are copied to `device`. Throws what the op's inference throws, or Unsupported
  /// when nothing can run the op there.
  PreparedCall(const OpSchema& op, const std::vector<Tensor>& host_inputs, const Attributes& attrs,
               int num_outputs, Device device);
  /// Queues one call on the device (may return before the device finishes: synchronize the
  /// device to wait).
  void run();
  Path path() const { return resolution_.path; }
  const std::string& reason() const { return resolution_.reason; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  Device device() const { return device_; }

 private:
  const OpSchema* op_;
  Attributes attrs_;
  int num_outputs_;
  Device device_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;
  Resolution resolution_;
  KernelContext ctx_;
};

}  // namespace porta::bench
