// porta runtime — the compute-precision policy (docs/ARCHITECTURE.md, "Compute precision"):
// which ops compute in a session's low format, which follow their inputs, which stay in f32,
// and the weights a session converts once.
#pragma once
#include <string>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "porta/op.hpp"
#include "porta/session.hpp"

namespace porta::detail {

/// What a session with a low precision does with an op (one table, as autocast's lists).
enum class PrecisionClass : uint8_t {
  lower,     ///< computes in the low format (kernels accumulate in f32)
  lower_inside,  ///< its products in the low format only inside a kernel that keeps the rest in
                 ///< f32 (KernelDef::computes_in: the LSTM/GRU cell and hidden state); else f32
  follow,    ///< exact in any format: runs in the low format when all its float inputs are
  keep_f32,  ///< numerically sensitive (or not yet judged): always gets f32 inputs
};

/// The class of `op` (qualified name; an op the table does not name is keep_f32).
PrecisionClass precision_class(const OpSchema& op);
/// True when the table names the op (so keep_f32 is a decision, not the default).
bool precision_listed(const OpSchema& op);
std::string_view precision_class_name(PrecisionClass c);

/// Multiply-adds of one call of a `lower` op (MatMul, Gemm, Conv, ConvTranspose, fused
/// attention, LSTM and GRU) from its input shapes (absent inputs: empty shapes), or -1 when the op is not one
/// of those or a shape is missing. Conv counts padding as computed.
int64_t product_macs(const OpSchema& op, const std::vector<Shape>& inputs, const Attributes& attrs);

/// `auto` lowers a product only from this many multiply-adds: below it the Casts around the
/// product cost what the low format saves. Measured on the cpu at 1 thread: MatMul+Relu alone,
/// f32 vs bf16 µs, 32x64x64 2.7 vs 3.1, 32x64x192 5.4 vs 4.8, 32x256x256 24 vs 15; but the zoo's
/// bert_encoder, whose products are 32x64x192 and 32x64x128, took 0.70x f32's speed with them
/// lowered (at 2^18) and 1.0x with them in f32.
constexpr int64_t kAutoMinMacs = int64_t{1} << 19;

/// The format a session computes its f32 work in: f32 (nothing is rewritten), bf16 or f16.
/// "auto" asks the device's backend (Capabilities::fast_dtypes: bf16 first, then f16).
DType low_precision_dtype(Precision p, Device device);

/// Why a session in `low` (bf16 or f16) on `device` gains nothing: the format is not among the
/// device's fast formats (Capabilities::fast_dtypes), so its kernels compute such products in
/// f32 or emulate it. "" for f32 or a fast format. The plan's precision notes and `porta run`
/// say it.
std::string low_precision_not_fast(DType low, Device device);

/// Why a session in `low` computes its products in f32 on `device`: the device has no
/// arithmetic for the format (Capabilities::products_in_f32). "" where it has.
std::string low_precision_in_f32(DType low, Device device);

/// Weights (graph constants) converted to a low format, once per session: the first plan
/// converts, every later plan (other input shapes) reuses. Holds the source tensor too, so
/// the key (its storage) cannot be reused while the entry lives.
class PrecisionCache {
 public:
  /// `weight` converted to `to` (on the host, rounding to nearest even).
  Tensor converted(const Tensor& weight, DType to);

 private:
  struct Entry {
    Tensor source, result;
  };
  std::map<std::pair<const void*, DType>, Entry> entries_;
};

}  // namespace porta::detail
