// porta runtime — graph rewrites a session applies before compiling (inference only).
#pragma once
#include <memory>

#include "runtime/graph.hpp"

namespace porta::detail {

/// Folds each BatchNormalization (inference mode) that directly follows a Conv into that Conv:
/// W'[m] = W[m] * a[m], B'[m] = (B[m] - mean[m]) * a[m] + shift[m], a = scale / sqrt(var + eps),
/// computed in float64 and stored as f32. Applies only when the Conv's weights (and bias) and
/// the BatchNormalization's four parameters are f32 constants, the Conv output feeds that
/// BatchNormalization alone and is not a graph output, and the BatchNormalization has one
/// output. The BatchNormalization node disappears; the Conv (keeping its name) produces its
/// output. Returns `graph` itself when nothing folds. PORTA_FUSE=0 turns folding off.
std::shared_ptr<const Graph> fold_conv_batch_norm(const std::shared_ptr<const Graph>& graph);

}  // namespace porta::detail
