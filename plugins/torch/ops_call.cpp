// plugins/torch — one boxed kernel for every torch.ops.porta.* op: torch's stack to porta's
// call and back.
#include "ops_call.hpp"

namespace porta_torch {

std::string input_label(const OpBinding& b, size_t index) {
  if (b.inputs.empty()) return porta::str("input ", index);
  size_t arg = std::min(index, b.inputs.size() - 1);
  if (b.inputs[arg].kind == InputArg::variadic)
    return porta::str("input ", index, " ('", b.inputs[arg].name, "'[", index - arg, "])");
  return porta::str("input ", index, " '", b.inputs[arg].name, "'");
}

TorchCall read_call(const OpBinding& b, const torch::jit::Stack& stack) {
  size_t nargs = b.inputs.size() + b.attrs.size();
  TORCH_CHECK(stack.size() >= nargs, "[", b.qualified, "] expected ", nargs, " arguments on the stack, got ",
              stack.size());
  const c10::IValue* args = stack.data() + (stack.size() - nargs);
  TorchCall call;
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    const c10::IValue& v = args[i];
    if (b.inputs[i].kind == InputArg::variadic) {
      for (const at::Tensor& t : v.toTensorVector()) call.inputs.push_back(t);
    } else if (v.isNone()) {
      call.inputs.emplace_back();
    } else {
      call.inputs.push_back(v.toTensor());
    }
  }
  for (size_t k = 0; k < b.attrs.size(); ++k) {
    const c10::IValue& v = args[b.inputs.size() + k];
    const AttrArg& a = b.attrs[k];
    if (v.isNone()) continue;  // absent: porta fills in the schema's default (or says it is required)
    switch (a.type) {
      case porta::AttrType::Int: call.attrs.set(a.name, v.toInt()); break;
      case porta::AttrType::Float: call.attrs.set(a.name, v.toDouble()); break;
      case porta::AttrType::String: call.attrs.set(a.name, v.toStringRef()); break;
      case porta::AttrType::Ints: call.attrs.set(a.name, v.toIntVector()); break;
      case porta::AttrType::Floats: call.attrs.set(a.name, v.toDoubleVector()); break;
      case porta::AttrType::Strings: {
        std::vector<std::string> strings;
        c10::List<c10::IValue> list = v.toList();
        for (size_t j = 0; j < list.size(); ++j) strings.push_back(list.get(j).toStringRef());
        call.attrs.set(a.name, std::move(strings));
        break;
      }
      case porta::AttrType::TensorValue: {
        at::Tensor t = v.toTensor().to(at::kCPU).contiguous();
        porta::DType dt = porta_dtype(t.scalar_type(), b.qualified, "attribute '" + a.name + "'");
        call.attrs.set(a.name, porta::Tensor::from_host(t.data_ptr(), porta::Shape(t.sizes().begin(), t.sizes().end()), dt));
        break;
      }
    }
  }
  return call;
}

void finish_call(const OpBinding& b, torch::jit::Stack& stack, std::vector<at::Tensor> outputs) {
  torch::jit::drop(stack, b.inputs.size() + b.attrs.size());
  if (b.num_outputs < 0) {
    stack.emplace_back(std::move(outputs));
    return;
  }
  TORCH_CHECK(static_cast<int>(outputs.size()) == b.num_outputs, "[", b.qualified, "] porta returned ",
              outputs.size(), " outputs, the torch schema has ", b.num_outputs);
  for (at::Tensor& t : outputs) stack.emplace_back(std::move(t));
}

std::vector<at::Tensor> run_porta(const OpBinding& b, const std::vector<at::Tensor>& inputs,
                                  const porta::Attributes& attrs) {
  for (const at::Tensor& t : inputs)
    if (t.defined()) {
      wait_for_torch(t.device());  // torch's writes to the inputs are done before porta reads
      break;
    }
  std::vector<porta::Tensor> ins;
  for (size_t i = 0; i < inputs.size(); ++i)
    ins.push_back(inputs[i].defined() ? to_porta(inputs[i], b.qualified, input_label(b, i)) : porta::Tensor());
  std::vector<porta::Tensor> outs;
  try {
    outs = porta::call_op(b.qualified, ins, attrs, b.num_outputs);
  } catch (const std::exception& e) {
    TORCH_CHECK(false, e.what());
  }
  std::vector<at::Tensor> result;
  for (const porta::Tensor& out : outs) {
    if (out.defined()) wait_for_porta(out.device());
    bool aliases_input = false;
    for (const porta::Tensor& in : ins) aliases_input |= in.defined() && out.defined() && in.storage() == out.storage();
    // An output sharing an input's memory (Reshape-like ops) is copied: torch's schema declares
    // no aliasing, and the input's memory is torch's, not porta's to hand out.
    result.push_back(!out.defined() ? at::Tensor() : aliases_input ? to_torch(out).clone() : to_torch(out));
  }
  return result;
}

void device_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const OpBinding& b = binding_of(handle.schema().name());
  TorchCall call = read_call(b, *stack);
  finish_call(b, *stack, run_porta(b, call.inputs, call.attrs));
}

}  // namespace porta_torch
