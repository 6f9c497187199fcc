// plugins/torch — moving tensors between PyTorch and porta without copies, and porta's errors
// into PyTorch's.
#pragma once
#include <torch/library.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "porta/porta.hpp"

namespace porta_torch {

/// A porta view of a CPU torch tensor: shares its memory when it is contiguous, else wraps
/// a contiguous copy (kept alive by `keep`). Throws c10::Error for an unsupported dtype.
porta::Tensor to_porta(const at::Tensor& t, std::vector<at::Tensor>& keep, const char* op, const char* what);
/// A torch tensor over a porta CPU tensor's memory (no copy; the storage lives as long as it).
at::Tensor to_torch(const porta::Tensor& t);
/// Runs porta op `op` on CPU tensors; porta errors become c10::Error carrying porta's message
/// (a Python RuntimeError).
at::Tensor run_porta(const char* op, const std::vector<at::Tensor>& inputs, const std::vector<bool>& present,
                     const porta::Attributes& attrs);

}  // namespace porta_torch
