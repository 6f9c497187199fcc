// porta ops — helpers shared by porta's own ops (domain ai.porta, version 1): the domain name,
// the checks every custom op makes on its last axis, and scalar constants for decompositions.
#pragma once
#include <span>
#include <string>

#include "ops/common.hpp"

namespace porta::opdef {

/// ONNX domain of porta's custom ops (opset version 1).
inline constexpr const char* kPortaDomain = "ai.porta";

/// Throws ShapeError unless input `i` is 1-D with `length` elements (a per-channel parameter
/// of the last axis): "[Op] Scale should be 1-D of length 64 (X 2x64), got 3x64".
inline void require_last_axis_vector(const InferContext& ctx, size_t i, int64_t length,
                                     const char* what) {
  const Shape& p = ctx.shape(i);
  if (p.size() != 1 || p[0] != length)
    throw ShapeError(str("[", ctx.op->name, "] ", what, " should be 1-D of length ", length, " (X ",
                         shape_str(ctx.shape(0)), "), got ", shape_str(p)));
}

/// Throws ShapeError unless input `i` has exactly `rank` dimensions.
inline void require_rank(const InferContext& ctx, size_t i, size_t rank, const char* what,
                         const char* layout) {
  if (ctx.shape(i).size() != rank)
    throw ShapeError(str("[", ctx.op->name, "] ", what, " should be ", rank, "-D (", layout, "), got ",
                         shape_str(ctx.shape(i))));
}

/// In a decomposition: whether optional input `i` was given.
inline bool present(std::span<const ValueId> in, size_t i) { return in.size() > i && in[i] >= 0; }

/// A scalar constant of `dtype` in a decomposition (broadcasts against anything).
inline ValueId scalar_constant(GraphBuilder& b, double value, DType dtype) {
  return b.constant(Tensor::scalar(value, dtype));
}

}  // namespace porta::opdef
