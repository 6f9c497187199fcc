// porta runtime — shared pieces of eager calls and session execution.
#pragma once
#include <string_view>
#include <vector>

#include "porta/dispatch.hpp"

namespace porta::detail {

/// Infers output infos of `op` for the given inputs (host values of host_inputs attached).
std::vector<ValueInfo> infer_outputs(const OpSchema& op, const Attributes& attrs,
                                     const std::vector<ValueInfo>& inputs, int num_outputs,
                                     std::string_view node_name);
/// Runs a kernel on prepared tensors: makes inputs contiguous when the kernel needs it, then
/// calls it through its device kind's call hook when one is installed.
void run_kernel(const KernelDef& kernel, KernelContext& ctx);
/// Bit i set: input i of the kernel call running on this thread is a session constant (a
/// weight: its storage and contents never change while the session lives). Kernels may cache
/// data derived from such inputs (reordered weights) keyed on their storage. 0 for eager calls.
uint64_t constant_inputs();
/// Sets constant_inputs() for the calls made while it lives (sessions, around run_kernel).
class ConstantInputsScope {
 public:
  explicit ConstantInputsScope(uint64_t mask);
  ~ConstantInputsScope();
  ConstantInputsScope(const ConstantInputsScope&) = delete;
  ConstantInputsScope& operator=(const ConstantInputsScope&) = delete;

 private:
  uint64_t saved_;
};
/// Wraps every kernel call of one device kind (optional). A backend installs it at load time
/// to set per-call execution state around `kernel.fn(ctx)` (the cpu backend picks the number
/// of threads from the size of the call). The hook must call kernel.fn(ctx) exactly once.
using KernelCallHook = void (*)(const KernelDef& kernel, KernelContext& ctx);
void set_kernel_call_hook(DeviceType type, KernelCallHook hook);
/// Dtype that selects the kernel for a call (schema's dispatch input, else output 0).
DType dispatch_dtype(const OpSchema& op, const std::vector<ValueInfo>& inputs,
                     const std::vector<ValueInfo>& outputs);
/// Number of outputs a call produces when the caller did not say.
int default_output_count(const OpSchema& op, const Attributes& attrs);
/// When on, every output an eager call allocates is first filled with a poison pattern
/// (NaN for floats, 0x5A bytes otherwise) so tests catch elements a kernel never writes.
/// `finite`: 0x5A bytes for floats too (a large finite value), for outputs whose right value is
/// NaN, which a NaN poison cannot tell from an element never written.
void set_poison_outputs(bool on, bool finite = false);
void poison(Tensor& t);
/// Rethrows the current exception with "node 'name': " added after its "[op]" tag,
/// keeping the error kind.
[[noreturn]] void rethrow_with_context(std::string_view context);

}  // namespace porta::detail
