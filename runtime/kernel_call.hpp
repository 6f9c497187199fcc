// porta runtime — calling a kernel: the one path every kernel call takes (eager calls, session
// steps, references, benchmarks), and the per-backend hook around it.
#pragma once
#include "porta/op.hpp"

namespace porta::detail {

/// Runs a kernel on prepared tensors: makes inputs contiguous when the kernel needs it, then
/// calls it through its device kind's call hook when one is installed.
void run_kernel(const KernelDef& kernel, KernelContext& ctx);

/// Wraps every kernel call of one device kind (optional). A backend installs it at load time
/// to set per-call execution state around `kernel.fn(ctx)` (the cpu backend picks the number
/// of threads from the size of the call). The hook must call kernel.fn(ctx) exactly once.
using KernelCallHook = void (*)(const KernelDef& kernel, KernelContext& ctx);
void set_kernel_call_hook(DeviceType type, KernelCallHook hook);

}  // namespace porta::detail
