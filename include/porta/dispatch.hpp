// porta — resolving (op, device, dtype) to what runs, and eager calls.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "porta/op.hpp"

namespace porta {

/// How a call runs on the requested device.
enum class Path : uint8_t {
  native,     ///< a kernel of that backend
  composite,  ///< the op's decomposition, run on that backend
  fallback,   ///< the CPU kernel, with copies to and from host
  folded,     ///< computed once when the session compiles (constant inputs or shapes only)
  unsupported
};
std::string_view path_name(Path p);

struct Resolution {
  Path path = Path::unsupported;
  const KernelDef* kernel = nullptr;  ///< for native and fallback
  std::string reason;                 ///< why this path (and why earlier ones were not taken)
};

/// Resolves the op for a device and dispatch dtype, without a concrete call (cached).
const Resolution& resolve(const OpSchema& op, Device device, DType dtype);
/// Resolves for a concrete call (asks each candidate kernel's `supports`).
Resolution resolve_call(const KernelContext& call, DType dtype);
/// Human-readable answer to "what runs for this op here, and why".
std::string explain(std::string_view op, Device device, DType dtype);

/// Global strict mode: fallback to the CPU becomes an Unsupported error.
void set_strict(bool strict);
bool strict();

/// Runs one op eagerly on its inputs' device. All defined inputs must be on one device
/// (else DeviceMismatch naming each). Attributes missing from `attrs` take their defaults.
std::vector<Tensor> call_op(std::string_view op, const std::vector<Tensor>& inputs,
                            const Attributes& attrs = {}, int num_outputs = -1);

/// Runs the op's float64 reference on the host: inputs are converted to f64, outputs are
/// f64 tensors with the inferred shapes; `out_dtypes` (optional) receives the dtypes the op
/// would produce. Ops without a reference run their composite through references.
std::vector<Tensor> reference_op(std::string_view op, const std::vector<Tensor>& inputs,
                                 const Attributes& attrs = {}, int num_outputs = -1,
                                 std::vector<DType>* out_dtypes = nullptr);

/// Fills in the schema's attribute defaults and checks the given ones (names and types).
Attributes complete_attributes(const OpSchema& op, const Attributes& given,
                               std::string_view context);

}  // namespace porta
