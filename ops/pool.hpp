// porta ops — MaxPool / AveragePool semantics shared by the definitions (reference) and the
// cpu kernel's own loop, so the rules for padding, ceil_mode and divisors live in one place.
#pragma once
#include <string_view>

#include "ops/window.hpp"
#include "porta/op.hpp"

namespace porta::opdef {

/// Geometry of a MaxPool / AveragePool call on `x` (reads kernel_shape, ceil_mode, ...).
WindowGeometry pool_geometry(std::string_view op, const Shape& x, const Attributes& attrs);

/// Number of window taps AveragePool divides by at output position `out_index` of axis `i`:
/// taps inside the input (count_include_pad = 0), or inside input plus the declared pads
/// (count_include_pad = 1; taps in the extra ceil_mode region never count, as in PyTorch).
int64_t pool_taps(const WindowGeometry& g, size_t i, int64_t out_index, bool include_pad);

}  // namespace porta::opdef
