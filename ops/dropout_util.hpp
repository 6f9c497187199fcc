// porta ops — Dropout's one rule, shared by its shape inference and every backend's kernel:
// porta runs inference, so Dropout must be the identity. training_mode = false (or absent)
// always is; training_mode = true is too when the ratio is 0 (torchvision's swin_t exports
// exactly that: F.dropout's default training=True with p = 0). Anything else would need random
// dropping, which is refused.
#pragma once
#include "porta/error.hpp"
#include "porta/tensor.hpp"
#include "porta/util.hpp"

#include <optional>
#include <vector>

namespace porta::opdef {

/// Throws Unsupported unless Dropout with these (host-readable) scalars is the identity.
/// `ratio` may be null (absent: ONNX's default 0.5).
inline void require_identity_dropout(bool training, const double* ratio) {
  if (!training) return;
  double r = ratio ? *ratio : 0.5;
  if (r != 0.0)
    throw Unsupported(str("[Dropout] training_mode = true drops at random with ratio ", r,
                          "; porta runs inference (expected training_mode false, or ratio 0)"));
}

/// The same for a kernel call: reads training_mode and ratio (inputs 2 and 1) from any device.
inline void require_identity_dropout(const std::vector<Tensor>& inputs) {
  auto scalar = [&](size_t i) -> std::optional<double> {
    if (i >= inputs.size() || !inputs[i].defined() || inputs[i].numel() != 1) return std::nullopt;
    return inputs[i].to_doubles().at(0);
  };
  std::optional<double> training = scalar(2), ratio = scalar(1);
  require_identity_dropout(training && *training != 0.0, ratio ? &*ratio : nullptr);
}

}  // namespace porta::opdef
