// porta runtime — shared pieces of eager calls and session execution (kernel calls themselves:
// runtime/kernel_call.hpp).
#pragma once
#include <functional>
#include <string_view>
#include <vector>

#include "porta/dispatch.hpp"

namespace porta::detail {

/// Infers output infos of `op` for the given inputs (host values of host_inputs attached).
std::vector<ValueInfo> infer_outputs(const OpSchema& op, const Attributes& attrs,
                                     const std::vector<ValueInfo>& inputs, int num_outputs,
                                     std::string_view node_name);
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

/// Whether a call carries porta-internal operands: a fused input such as Conv's porta_residual,
/// or any attribute a session sets for its kernels (`porta_activation`, `porta_f32_output`,
/// `porta_compute`), which a kernel must declare to take. Such a call is resolved for its
/// concrete operands even when the chosen kernel has no `supports`.
bool carries_internal_operands(const KernelContext& call);

/// Whether every kernel that may run `op` for `dtype` on `device` satisfies `declares`: the
/// device's kernels (at least one), and the cpu's, which take the calls they decline. A
/// session asks for a porta-internal call (a fused activation, an f32 output from half inputs,
/// a format computed inside) only where this holds, so no kernel is left to decline it.
bool every_kernel_declares(const OpSchema& op, DType dtype, Device device,
                           const std::function<bool(const KernelDef&)>& declares);
/// The smallest KernelDef::limits entry `name` among `device`'s own kernels of `op` for
/// `dtype` (INT64_MAX where none declares it or none exists): how large a call a rewrite may
/// build for that device.
int64_t kernel_limit(const OpSchema& op, DType dtype, Device device, const std::string& name);

}  // namespace porta::detail
