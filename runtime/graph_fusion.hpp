// porta runtime — graph rewrites a session applies before compiling (inference only).
#pragma once
#include <memory>

#include "runtime/graph.hpp"

namespace porta::detail {

/// False when PORTA_FUSE=0: the rewrites below, and the blocked activation layouts that cpu
/// plans chain between Conv and MaxPool steps (runtime/session_compile.cpp), are off.
bool fusion_enabled();

/// Folds each BatchNormalization (inference mode) that directly follows a Conv into that Conv:
/// W'[m] = W[m] * a[m], B'[m] = (B[m] - mean[m]) * a[m] + shift[m], a = scale / sqrt(var + eps),
/// computed in float64 and stored as f32. Applies only when the Conv's weights (and bias) and
/// the BatchNormalization's four parameters are f32 constants, the Conv output feeds that
/// BatchNormalization alone and is not a graph output, and the BatchNormalization has one
/// output. The BatchNormalization node disappears; the Conv (keeping its name) produces its
/// output. Returns `graph` itself when nothing folds. PORTA_FUSE=0 turns folding off.
std::shared_ptr<const Graph> fold_conv_batch_norm(const std::shared_ptr<const Graph>& graph);

/// Fuses each Relu that directly follows a Conv into that Conv as its porta-internal
/// `porta_activation = "Relu"` attribute (ops/conv.cpp), so the cpu kernel applies it as a
/// oneDNN post-op instead of a separate pass. Applies only when the Conv (default domain, f32
/// weights, no activation yet) has one output that feeds that Relu alone and is not a graph
/// output. The Relu node disappears; the Conv (keeping its name) produces its output. Only cpu
/// kernels honour the attribute, so sessions on other devices, and sessions that keep every
/// intermediate value (`keep_values`), are left alone: pass `enabled` = false for them.
/// Returns `graph` itself when nothing fuses. PORTA_FUSE=0 turns fusion off.
std::shared_ptr<const Graph> fuse_conv_relu(const std::shared_ptr<const Graph>& graph, bool enabled);

}  // namespace porta::detail
