// plugins/torch — moving tensors between PyTorch and porta without copies, and porta's errors
// into PyTorch's.
#pragma once
#include <torch/library.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "porta/porta.hpp"

namespace porta_torch {

/// porta's dtype for a torch dtype; throws c10::Error naming the op and the operand for a dtype
/// porta lacks (complex, int16...).
porta::DType porta_dtype(at::ScalarType s, const std::string& op, const std::string& what);
/// torch's dtype for a porta dtype.
at::ScalarType torch_dtype(porta::DType d);

/// A porta view of a torch tensor on cpu, or on cuda when porta has a cuda backend: shares its
/// memory, strides included (non-contiguous views are passed as such; porta's kernels make
/// them contiguous only where they need to). Throws c10::Error naming the op, the operand and
/// the device when porta has no backend for the tensor's device.
porta::Tensor to_porta(const at::Tensor& t, const std::string& op, const std::string& what);
/// A torch tensor over a porta tensor's memory (cpu or cuda; no copy: the torch tensor holds
/// the porta storage until torch lets go).
at::Tensor to_torch(const porta::Tensor& t);

/// Makes porta's work on `device` ordered after torch's pending work on it (cuda: torch's
/// current stream is waited for before porta's stream reads the inputs); nothing on cpu.
void wait_for_torch(const at::Device& device);
/// Waits for porta's work on `device` to finish before torch reads the outputs (cuda); nothing
/// on cpu.
void wait_for_porta(const porta::Device& device);

}  // namespace porta_torch
