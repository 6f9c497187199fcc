// porta runtime — weighing a composite on the device against a CPU fallback of the whole op
// (docs/PLACEMENT.md). Used by the session compiler for ops without a native kernel.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"

namespace porta::detail {

/// Bytes per run that the CPU fallbacks inside `op`'s decomposition would copy on `device`
/// (inputs to the host and results back, per part that has neither a device kernel nor a
/// decomposition of its own; nested decompositions are expanded). Constants are free: they
/// are copied once when the session compiles. 0 when every part runs on the device.
size_t composite_copy_bytes(const OpSchema& op, const Attributes& attrs, const std::vector<ValueInfo>& inputs,
                            Device device);

/// Bytes per run that running the whole op on the CPU would copy: its non-constant inputs
/// to the host and its outputs back.
size_t fallback_copy_bytes(const std::vector<ValueInfo>& inputs, const std::vector<ValueInfo>& outputs);

struct PlacementChoice {
  bool fallback = false;        ///< true: run the whole op on the CPU
  size_t composite_bytes = 0;   ///< copies the decomposition would make
  size_t fallback_bytes = 0;    ///< copies the whole-op fallback would make
  std::string reason;           ///< the comparison, for `porta ops`
};

/// For an op that resolved to `composite` on a non-cpu device: keep the decomposition unless
/// its own CPU fallbacks would copy more bytes than falling back with the whole op (which
/// needs a cpu kernel for it, and is never chosen in strict mode).
PlacementChoice weigh_composite(const OpSchema& op, const Attributes& attrs, const std::vector<ValueInfo>& inputs,
                                const std::vector<ValueInfo>& outputs, Device device, DType dtype, bool strict);

}  // namespace porta::detail
