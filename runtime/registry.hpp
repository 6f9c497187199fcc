// porta runtime — internal view of the registry (ops, kernels, backends).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "porta/op.hpp"

namespace porta::detail {

/// Incremented whenever ops or kernels change, so caches know to refresh.
uint64_t registry_generation();
/// Problems found while checking kernels against schemas (kernel for an unknown op, ...).
std::vector<std::string> registry_problems();
/// Kernels removed by PORTA_DISABLE_KERNELS ("vulkan:RmsNorm").
std::vector<std::string> disabled_kernels();
/// Entries of PORTA_DISABLE_KERNELS that disable no kernel (unknown device kind, op or
/// implementation), each a sentence naming the entry; also printed once as a warning.
std::vector<std::string> disabled_kernel_problems();
/// Re-reads PORTA_DISABLE_KERNELS (tests change it at run time).
void reload_disabled_kernels();
/// Removes every op and kernel registered from `source` (a plugin being unloaded).
void unregister_source(const std::string& source);

/// Whether kernel `k` declares `name` in KernelDef::fused_activations: an activation it
/// applies, or a porta-internal input or part it takes (porta_residual, porta_bias,
/// porta_concat).
inline bool kernel_fuses(const KernelDef& k, std::string_view name) {
  for (const std::string& n : k.fused_activations)
    if (n == name) return true;
  return false;
}

}  // namespace porta::detail
