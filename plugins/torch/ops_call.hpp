// plugins/torch — the kernels behind torch.ops.porta.*: one boxed kernel for all ops, which
// reads the op's arguments off torch's stack as porta inputs and attributes, and the autograd
// path (autograd.cpp) that differentiates an op through its composite.
#pragma once
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <vector>

#include "op_binding.hpp"
#include "torch_bridge.hpp"

namespace porta_torch {

/// One call's operands: porta's flat input list (a variadic input expanded; an undefined tensor
/// for an absent optional input) and the attributes given (None ones left out).
struct TorchCall {
  std::vector<at::Tensor> inputs;
  porta::Attributes attrs;
};

/// Reads a call of `b` off the last arguments of `stack` (leaving them there).
TorchCall read_call(const OpBinding& b, const torch::jit::Stack& stack);
/// Pops the call's arguments and pushes `outputs` as the op's torch return value.
void finish_call(const OpBinding& b, torch::jit::Stack& stack, std::vector<at::Tensor> outputs);
/// Runs the op through porta's dispatcher on its inputs' device; porta's errors become
/// c10::Error with porta's message (a Python RuntimeError).
std::vector<at::Tensor> run_porta(const OpBinding& b, const std::vector<at::Tensor>& inputs,
                                  const porta::Attributes& attrs);
/// "input 1 'Scale'": how messages name an input of the flat list.
std::string input_label(const OpBinding& b, size_t index);

/// The CPU/CUDA/Meta kernel: runs porta (and says so when the device is one porta lacks).
void device_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet keys, torch::jit::Stack* stack);
/// The Autograd kernel: porta runs the forward; when an input requires grad, the result's
/// backward runs the op's composite under torch autograd (autograd.cpp).
void autograd_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet keys, torch::jit::Stack* stack);

/// The op's outputs computed by torch ops that autograd can differentiate: the op's composite,
/// each node in turn through its own composite or, for ops without one, the torch formula of
/// torch_formulas.cpp. Throws c10::Error naming the op (and the node of its composite) when
/// there is no such path.
std::vector<at::Tensor> run_differentiable(const porta::OpSchema& op, const std::vector<at::Tensor>& inputs,
                                           const porta::Attributes& attrs, int num_outputs);
/// The torch formula of an op without a composite (ONNX semantics), or nullptr.
using Formula = std::vector<at::Tensor> (*)(const std::vector<at::Tensor>& inputs, const porta::Attributes& attrs,
                                            int num_outputs);
Formula find_formula(const std::string& qualified_name);

}  // namespace porta_torch
