// porta runtime — graph rewrites a session applies before compiling (inference only).
#pragma once
#include <memory>

#include "runtime/graph.hpp"

namespace porta::detail {

/// False when PORTA_FUSE=0: the rewrites below, and the private activation layouts that plans
/// chain between kernels declaring one (runtime/plan_layouts.cpp), are off.
bool fusion_enabled();

/// Folds each BatchNormalization (inference mode) that directly follows a Conv into that Conv:
/// W'[m] = W[m] * a[m], B'[m] = (B[m] - mean[m]) * a[m] + shift[m], a = scale / sqrt(var + eps),
/// computed in float64 and stored as f32. Applies only when the Conv's weights (and bias) and
/// the BatchNormalization's four parameters are f32 constants, the Conv output feeds that
/// BatchNormalization alone and is not a graph output, and the BatchNormalization has one
/// output. The BatchNormalization node disappears; the Conv (keeping its name) produces its
/// output. Returns `graph` itself when nothing folds. PORTA_FUSE=0 turns folding off.
std::shared_ptr<const Graph> fold_conv_batch_norm(const std::shared_ptr<const Graph>& graph);

/// Fuses each single-input activation node that directly follows a node whose op has the
/// attribute `porta_activation` (Conv) into that node, by setting the attribute to the
/// activation's op name, when every kernel that may run the node on `device` for its dtype
/// declares that activation (KernelDef::fused_activations; the cpu's kernels too, as they take
/// calls the device's decline). Applies only when the node has one output that feeds that
/// activation alone and is not a graph output. The activation node disappears; the producer
/// (keeping its name) produces its output. Sessions that keep every intermediate value
/// (`keep_values`) pass `enabled` = false. Returns `graph` itself when nothing fuses.
/// PORTA_FUSE=0 turns fusion off.
std::shared_ptr<const Graph> fuse_activations(const std::shared_ptr<const Graph>& graph, Device device, bool enabled);

}  // namespace porta::detail
