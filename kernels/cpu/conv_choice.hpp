// porta cpu kernels — which algorithm and which activation layout a oneDNN Conv primitive gets
// (kernels/cpu/conv.cpp builds it): the rules, each measured, in conv_choice.cpp.
#pragma once
#include "kernels/cpu/dnn_layout.hpp"
#include "ops/window.hpp"
#include "porta/tensor.hpp"

namespace porta::cpu {

/// Whether a conv of input `x`, weights `w` and geometry `g` runs oneDNN's Winograd rather than
/// its direct kernel: 2-D 3x3 stride-1 undilated ungrouped, channels in multiples of 16, at
/// least one 4x4 output tile, and enough multiply-adds per thread of the call's budget.
/// PORTA_CONV_WINOGRAD=0 turns it off.
bool use_winograd(const Shape& x, const Shape& w, int64_t group, const opdef::WindowGeometry& g);

/// Whether a dense conv whose output has at most 16 pixels per image runs channel-blocked even
/// between channels-last steps (reordering its few pixels in and out inside the step).
bool small_blocked(const Shape& x, const Shape& y, int64_t group, const opdef::WindowGeometry& g);

/// Whether a network's first conv (a plain image of a few channels into a channels-last output
/// of 16 or 32 channels) writes channel-blocked and transposes per pixel block after.
bool image_to_blocked(const Shape& x, const Shape& y, int64_t group, LayoutSides layout, bool residual);

}  // namespace porta::cpu
