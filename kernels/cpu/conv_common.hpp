// porta cpu kernels — what every cpu Conv implementation declares alike.
#pragma once
#include "porta/op.hpp"

namespace porta::cpu {

/// Conv's KernelDef without impl, fn and supports: the dtypes, the low format computed inside,
/// the fused activations and residual, and the channels-last activation layout. A session asks
/// a node for one of these only when every kernel that may run it declares it, so each cpu
/// Conv implementation declares them all (declining in `supports` what it leaves to another).
KernelDef conv_kernel_def();

/// How a cpu Conv call's activations are stored: channels-last (oneDNN's layout, which a session
/// keeps between layout-aware kernels) or plain, for the input, the output and the fused
/// residual (false where there is none). For the kernels that read and write them directly.
struct ConvLayouts {
  bool x_last = false, y_last = false, r_last = false;
};
ConvLayouts conv_layouts(KernelContext& ctx);

/// Prepared Conv calls run as row blocks, one thread each (kernels/cpu/conv.cpp), since the
/// process started: how tests know that path ran.
uint64_t conv_row_block_runs();
/// Conv calls that ran with pairs of groups merged (kernels/cpu/conv.cpp, group_merge), since
/// the process started.
uint64_t conv_merged_group_runs();

}  // namespace porta::cpu
