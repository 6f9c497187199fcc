// plugins/torch — gradients of torch.ops.porta.*: porta runs the forward; the backward
// recomputes the op through its composite (porta's decomposition of the op into other ops),
// each node as torch ops, and lets torch autograd differentiate that. The composite is the
// backward path: an op gets gradients exactly when it, or every op its composite reaches, has
// a composite or a torch formula (torch_formulas.cpp).
#include <torch/csrc/autograd/custom_function.h>

#include "ops_call.hpp"

namespace porta_torch {
namespace {

// Runs a composite's nodes as torch ops, so autograd records them.
class TorchBuilder final : public porta::GraphBuilder {
 public:
  TorchBuilder(const porta::OpSchema& op, at::Device device) : op_(op), device_(device) {}

  porta::ValueId push(at::Tensor t) {
    shapes_.emplace_back(t.sizes().begin(), t.sizes().end());
    values_.push_back(std::move(t));
    return static_cast<porta::ValueId>(values_.size() - 1);
  }
  const at::Tensor& get(porta::ValueId v) const { return values_.at(v); }

  std::vector<porta::ValueId> add(std::string_view name, std::vector<porta::ValueId> inputs, porta::Attributes attrs,
                                  int num_outputs) override {
    const porta::OpSchema* node = porta::find_op(name);
    TORCH_CHECK(node, "[", op_.qualified_name(), "] its composite uses ", porta::describe_unknown_op(name));
    std::vector<at::Tensor> ins;
    for (porta::ValueId v : inputs) ins.push_back(v < 0 ? at::Tensor() : values_.at(v));
    porta::Attributes full;
    try {
      full = porta::complete_attributes(*node, attrs, porta::str("composite of ", op_.qualified_name()));
    } catch (const std::exception& e) {
      TORCH_CHECK(false, e.what());
    }
    std::vector<at::Tensor> outs;
    try {
      outs = run_differentiable(*node, ins, full, num_outputs);
    } catch (const c10::Error& e) {
      TORCH_CHECK(false, "[", op_.qualified_name(), "] its composite (the path of its gradient) uses ",
                  node->qualified_name(), ": ", e.what_without_backtrace());
    }
    std::vector<porta::ValueId> ids;
    for (at::Tensor& t : outs) ids.push_back(push(std::move(t)));
    return ids;
  }
  porta::ValueId constant(const porta::Tensor& value) override {
    return push(to_torch(value.to(porta::Device::cpu())).clone().to(device_));
  }
  const porta::Shape& shape(porta::ValueId v) const override { return shapes_.at(v); }
  porta::DType dtype(porta::ValueId v) const override {
    return porta_dtype(values_.at(v).scalar_type(), op_.qualified_name(), "a value of its composite");
  }

 private:
  const porta::OpSchema& op_;
  at::Device device_;
  std::vector<at::Tensor> values_;
  std::vector<porta::Shape> shapes_;
};

// What backward needs of a call besides its inputs.
struct CallInfo : torch::CustomClassHolder {
  const OpBinding* binding = nullptr;
  porta::Attributes attrs;
  /// Which of porta's inputs are present: autograd is given only those (it cannot track an
  /// undefined tensor), and the full list is rebuilt from them.
  std::vector<bool> present;

  std::vector<at::Tensor> full_inputs(at::TensorList defined) const {
    std::vector<at::Tensor> all;
    size_t next = 0;
    for (bool p : present) all.push_back(p ? defined[next++] : at::Tensor());
    return all;
  }
};

struct PortaFunction : torch::autograd::Function<PortaFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, at::TensorList inputs,
                                                c10::intrusive_ptr<CallInfo> info) {
    std::vector<at::Tensor> outs = run_porta(*info->binding, info->full_inputs(inputs), info->attrs);
    ctx->save_for_backward(inputs.vec());
    ctx->saved_data["info"] = c10::IValue::make_capsule(info);
    std::vector<at::Tensor> integral;
    for (const at::Tensor& t : outs)
      if (t.defined() && !at::isFloatingType(t.scalar_type())) integral.push_back(t);
    ctx->mark_non_differentiable(integral);
    return outs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto info = c10::static_intrusive_pointer_cast<CallInfo>(ctx->saved_data["info"].toCapsule());
    const OpBinding& b = *info->binding;
    std::vector<at::Tensor> saved = ctx->get_saved_variables();  // the present inputs
    // Double backward (create_graph) differentiates the recomputation itself: keep the inputs.
    bool create_graph = at::GradMode::is_enabled();
    at::AutoGradMode enable(true);
    std::vector<at::Tensor> xs, wrt;
    std::vector<size_t> wrt_index;
    for (size_t i = 0; i < saved.size(); ++i) {
      at::Tensor x = saved[i];
      bool wanted = x.defined() && ctx->needs_input_grad(i) && at::isFloatingType(x.scalar_type());
      if (x.defined() && !create_graph) x = x.detach().requires_grad_(wanted);
      if (wanted) {
        wrt.push_back(x);
        wrt_index.push_back(i);
      }
      xs.push_back(x);
    }
    torch::autograd::variable_list grads(saved.size() + 1);  // + the CallInfo argument
    if (wrt.empty()) return grads;
    porta::Attributes full;
    try {
      full = porta::complete_attributes(*b.op, info->attrs, "backward");
    } catch (const std::exception& e) {
      TORCH_CHECK(false, e.what());
    }
    std::vector<at::Tensor> outs = run_differentiable(*b.op, info->full_inputs(xs), full, static_cast<int>(grad_outputs.size()));
    std::vector<at::Tensor> ys, gys;
    for (size_t k = 0; k < outs.size() && k < grad_outputs.size(); ++k) {
      if (!grad_outputs[k].defined() || !outs[k].defined() || !outs[k].requires_grad()) continue;
      ys.push_back(outs[k]);
      gys.push_back(grad_outputs[k]);
    }
    if (ys.empty()) return grads;
    std::vector<at::Tensor> g = torch::autograd::grad(ys, wrt, gys, /*retain_graph=*/create_graph, create_graph,
                                                      /*allow_unused=*/true);
    for (size_t k = 0; k < wrt_index.size(); ++k) grads[wrt_index[k]] = g[k];
    return grads;
  }
};

}  // namespace

std::vector<at::Tensor> run_differentiable(const porta::OpSchema& op, const std::vector<at::Tensor>& inputs,
                                           const porta::Attributes& attrs, int num_outputs) {
  if (op.composite) {
    at::Device device = at::kCPU;
    for (const at::Tensor& t : inputs)
      if (t.defined()) { device = t.device(); break; }
    TorchBuilder builder(op, device);
    std::vector<porta::ValueId> ids;
    for (const at::Tensor& t : inputs) ids.push_back(t.defined() ? builder.push(t) : -1);
    std::vector<porta::ValueId> outs;
    try {
      outs = op.composite(builder, ids, attrs);
    } catch (const c10::Error&) {
      throw;
    } catch (const std::exception& e) {
      TORCH_CHECK(false, e.what());
    }
    std::vector<at::Tensor> result;
    for (int k = 0; k < static_cast<int>(outs.size()) && (num_outputs < 0 || k < num_outputs); ++k)
      result.push_back(outs[k] < 0 ? at::Tensor() : builder.get(outs[k]));
    return result;
  }
  if (Formula f = find_formula(op.qualified_name())) return f(inputs, attrs, num_outputs);
  TORCH_CHECK(false, "[", op.qualified_name(),
              "] has no differentiable path for backward: it has no composite (a decomposition into other ops) "
              "and no torch formula in libporta_torch, so porta can run it but torch cannot differentiate it. "
              "Give the op a composite in its schema to get gradients");
}

void autograd_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const OpBinding& b = binding_of(handle.schema().name());
  TorchCall call = read_call(b, *stack);
  bool needs_grad = false;
  if (at::GradMode::is_enabled())
    for (const at::Tensor& t : call.inputs) needs_grad |= t.defined() && t.requires_grad();
  if (!needs_grad) {
    finish_call(b, *stack, run_porta(b, call.inputs, call.attrs));
    return;
  }
  auto info = c10::make_intrusive<CallInfo>();
  info->binding = &b;
  info->attrs = call.attrs;
  std::vector<at::Tensor> defined;
  for (const at::Tensor& t : call.inputs) {
    info->present.push_back(t.defined());
    if (t.defined()) defined.push_back(t);
  }
  finish_call(b, *stack, PortaFunction::apply(at::TensorList(defined), info));
}

}  // namespace porta_torch
