// porta — per-node accuracy of a model on devices, against the float64 reference.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "porta/session.hpp"

namespace porta {

/// One node's error on one device.
/// max_abs = max |device - reference|; rel = ||device - reference||_2 / ||reference||_2 over the
/// node's outputs (a NaN on exactly one side, or a shape that differs, counts as infinite error).
struct NodeError {
  std::string node;  ///< the node's name ("" when the model gives none)
  std::string op;    ///< OpSchema::qualified_name()
  Device device;
  double max_abs = 0;
  double rel = 0;
  /// false when the device's session kept none of the node's outputs (its node was fused into
  /// another); max_abs and rel are then 0 and the node is never over the tolerance.
  bool computed = true;
  bool over = false;  ///< rel > tolerance (or not a number)
  /// The format the node computed in on the device (NodePlan::precision; f32 unless a
  /// precision was asked for).
  DType precision = DType::f32;
  /// The error jumps here: rel is over the tolerance and over CheckOptions::jump times the
  /// largest rel of the nodes that produced its inputs on the device (so the node itself, not
  /// what it was given, lost the accuracy).
  bool jump = false;
  /// Nodes computed inside this one on the device, whose own values were not kept (the ops a
  /// graph fusion folded into it, e.g. "Conv" before a BatchNormalization): its error and
  /// `precision` include theirs. "" when none.
  std::string fused;
};

struct CheckOptions {
  std::vector<Device> devices = {Device::cpu()};
  bool strict = false;       ///< sessions refuse CPU fallback
  double tolerance = 1e-4;   ///< bound on rel
  /// The sessions' compute precision (SessionOptions::precision): the per-node error of a
  /// low-precision run against the float64 reference.
  Precision precision = Precision::f32;
  double jump = 4.0;  ///< NodeError::jump: the factor over the inputs' error
};

/// Runs `model` on every device of `options` (keeping every value) and node by node on the
/// float64 reference (porta::reference_op), and returns one record per (node, device), nodes in
/// graph order, devices in the order given. Throws InvalidArgument for a missing input.
std::vector<NodeError> check_model(const Model& model, const std::map<std::string, Tensor>& inputs,
                                   const CheckOptions& options = {});

}  // namespace porta
