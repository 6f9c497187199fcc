// porta runtime — eager op calls: infer, resolve, run (native, composite or fallback).
#include "runtime/eager.hpp"
#include "runtime/kernel_call.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

#include "porta/error.hpp"
#include "porta/half.hpp"
#include "porta/util.hpp"

namespace porta {
namespace detail {

[[noreturn]] void rethrow_with_context(std::string_view context) {
  try {
    throw;
  } catch (const Error& e) {
    std::string msg = e.what();
    std::string add = str(context, ": ");
    if (msg.starts_with("[")) {
      size_t close = msg.find("] ");
      if (close != std::string::npos) msg.insert(close + 2, add);
      else msg = add + msg;
    } else {
      msg = add + msg;
    }
    e.rethrow_with(msg);
  }
}

std::vector<ValueInfo> infer_outputs(const OpSchema& op, const Attributes& attrs,
                                     const std::vector<ValueInfo>& inputs, int num_outputs,
                                     std::string_view node_name) {
  int n_in = static_cast<int>(inputs.size());
  if (n_in < op.min_inputs() || (op.max_inputs() >= 0 && n_in > op.max_inputs()))
    throw InvalidModel(str("[", op.name, "] ", node_name.empty() ? "" : str("node '", node_name, "': "),
                           "expected ", op.min_inputs(),
                           op.max_inputs() < 0 ? " or more" : str(" to ", op.max_inputs()),
                           " inputs, got ", n_in));
  for (int i = 0; i < std::min(n_in, op.min_inputs()); ++i)
    if (!inputs[i].present)
      throw InvalidModel(str("[", op.name, "] ", node_name.empty() ? "" : str("node '", node_name, "': "),
                             "required input ", i, " (", op.inputs[i], ") is missing"));
  if (num_outputs < 1 || (op.max_outputs() >= 0 && num_outputs > op.max_outputs()))
    throw InvalidModel(str("[", op.name, "] ", node_name.empty() ? "" : str("node '", node_name, "': "),
                           "expected ", std::max(1, op.min_outputs()),
                           op.max_outputs() < 0 ? " or more" : op.max_outputs() == std::max(1, op.min_outputs()) ? "" : str(" to ", op.max_outputs()),
                           " output(s), got ", num_outputs));
  InferContext ctx;
  ctx.op = &op;
  ctx.attrs = &attrs;
  ctx.inputs = inputs;
  ctx.outputs.resize(num_outputs);
  op.infer(ctx);
  return std::move(ctx.outputs);
}

DType dispatch_dtype(const OpSchema& op, const std::vector<ValueInfo>& inputs,
                     const std::vector<ValueInfo>& outputs) {
  int i = op.dispatch_input;
  if (i >= 0 && i < static_cast<int>(inputs.size()) && inputs[i].present) return inputs[i].dtype;
  if (!outputs.empty()) return outputs[0].dtype;
  return DType::f32;
}

static std::atomic<bool> g_poison{false};
static std::atomic<bool> g_poison_finite{false};
void set_poison_outputs(bool on, bool finite) {
  g_poison = on;
  g_poison_finite = finite;
}

void poison(Tensor& t) {
  if (!t.defined() || t.numel() == 0) return;
  std::vector<unsigned char> bytes(t.nbytes(), 0x5A);
  if (is_floating(t.dtype()) && !g_poison_finite) {
    size_t n = static_cast<size_t>(t.numel());
    visit_dtype(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        T nan = from_double<T>(std::numeric_limits<double>::quiet_NaN());
        for (size_t i = 0; i < n; ++i) std::memcpy(bytes.data() + i * sizeof(T), &nan, sizeof(T));
      }
    });
  }
  t.copy_from_host(bytes.data(), bytes.size());
}

int default_output_count(const OpSchema& op, const Attributes& attrs) {
  if (op.max_outputs() >= 0) return op.max_outputs();
  if (attrs.has("num_outputs")) return static_cast<int>(attrs.get_int("num_outputs"));
  return std::max(1, op.min_outputs());
}

}  // namespace detail

namespace {

// Executes a composite decomposition immediately, node by node, on one device.
class EagerBuilder final : public GraphBuilder {
 public:
  explicit EagerBuilder(Device device) : device_(device) {}
  ValueId push(Tensor t) {
    values_.push_back(std::move(t));
    return static_cast<ValueId>(values_.size() - 1);
  }
  const Tensor& get(ValueId v) const { return values_.at(v); }

  std::vector<ValueId> add(std::string_view op, std::vector<ValueId> inputs, Attributes attrs,
                           int num_outputs) override {
    std::vector<Tensor> ins;
    for (ValueId v : inputs) ins.push_back(v < 0 ? Tensor() : values_.at(v));
    std::vector<Tensor> outs = call_op(op, ins, attrs, num_outputs);
    std::vector<ValueId> ids;
    for (auto& t : outs) ids.push_back(push(std::move(t)));
    return ids;
  }
  ValueId constant(const Tensor& value) override { return push(value.to(device_)); }
  const Shape& shape(ValueId v) const override { return values_.at(v).shape(); }
  DType dtype(ValueId v) const override { return values_.at(v).dtype(); }

 private:
  Device device_;
  std::vector<Tensor> values_;
};

}  // namespace

std::vector<Tensor> call_op(std::string_view op_name, const std::vector<Tensor>& inputs,
                            const Attributes& given_attrs, int num_outputs) {
  const OpSchema* op = find_op(op_name);
  if (!op) throw Unsupported(str("[", op_name, "] ", describe_unknown_op(op_name)));

  // One device for all inputs.
  Device device = Device::cpu();
  const Tensor* first = nullptr;
  for (auto& t : inputs) {
    if (!t.defined()) continue;
    if (!first) {
      first = &t;
      device = t.device();
    } else if (t.device() != device) {
      std::string where;
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].defined())
          where += str(where.empty() ? "" : ", ", "input ", i, " is on ", inputs[i].device().str());
      throw DeviceMismatch(str("[", op->name, "] inputs are on different devices: ", where));
    }
  }
  Backend& backend = backend_for(device);
  Attributes attrs = complete_attributes(*op, given_attrs, "");
  if (num_outputs < 0) num_outputs = detail::default_output_count(*op, attrs);

  // Shape inference; shape-deciding inputs are read on the host.
  std::vector<ValueInfo> infos(inputs.size());
  std::vector<Tensor> host_values(op->host_inputs.empty() ? 0 : inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    infos[i].present = inputs[i].defined();
    if (!infos[i].present) continue;
    infos[i].shape = inputs[i].shape();
    infos[i].dtype = inputs[i].dtype();
    bool host_needed = false;
    for (int h : op->host_inputs) host_needed |= h == static_cast<int>(i);
    if (host_needed) {
      host_values[i] = inputs[i].to(Device::cpu()).contiguous();
      infos[i].value = &host_values[i];
    }
  }
  std::vector<ValueInfo> out_infos = detail::infer_outputs(*op, attrs, infos, num_outputs, "");
  DType dtype = detail::dispatch_dtype(*op, infos, out_infos);

  KernelContext ctx;
  ctx.op = op;
  ctx.attrs = &attrs;
  ctx.device = device;
  ctx.backend = &backend;
  ctx.inputs = inputs;
  // The cached resolution by reference; a concrete-call resolution (a copy) only when the
  // chosen kernel may decline this call.
  const Resolution& cached = resolve(*op, device, dtype);
  Resolution concrete;
  bool need_concrete =
      !(cached.path == Path::native && !cached.kernel->supports && !detail::carries_internal_operands(ctx)) &&
      (cached.path == Path::native || cached.path == Path::fallback);
  if (need_concrete) concrete = resolve_call(ctx, dtype);
  const Resolution& r = need_concrete ? concrete : cached;
  if (r.path == Path::fallback && strict())
    throw Unsupported(str("[", op->name, "] strict mode: no ", device.str(), " kernel (",
                          r.reason, ")"));
  switch (r.path) {
    case Path::native: {
      ctx.outputs.reserve(out_infos.size());
      for (auto& info : out_infos) {
        ctx.outputs.push_back(Tensor::empty(info.shape, info.dtype, device));
        if (detail::g_poison) detail::poison(ctx.outputs.back());
      }
      detail::run_kernel(*r.kernel, ctx);
      return std::move(ctx.outputs);
    }
    case Path::composite: {
      EagerBuilder builder(device);
      std::vector<ValueId> ids;
      for (auto& t : inputs) ids.push_back(t.defined() ? builder.push(t) : -1);
      std::vector<ValueId> outs = op->composite(builder, ids, attrs);
      std::vector<Tensor> result;
      for (int i = 0; i < num_outputs && i < static_cast<int>(outs.size()); ++i)
        result.push_back(outs[i] < 0 ? Tensor() : builder.get(outs[i]));
      return result;
    }
    case Path::fallback: {
      Backend& cpu = backend_for(Device::cpu());
      KernelContext host;
      host.op = op;
      host.attrs = &attrs;
      host.device = Device::cpu();
      host.backend = &cpu;
      for (auto& t : inputs) host.inputs.push_back(t.defined() ? t.to(Device::cpu()) : Tensor());
      for (auto& info : out_infos) {
        host.outputs.push_back(Tensor::empty(info.shape, info.dtype));
        if (detail::g_poison) detail::poison(host.outputs.back());
      }
      detail::run_kernel(*r.kernel, host);
      std::vector<Tensor> result;
      for (auto& t : host.outputs) result.push_back(t.to(device));
      return result;
    }
    case Path::folded:
    case Path::unsupported:
      break;
  }
  throw Unsupported(r.reason);
}

// ---- InferContext helpers --------------------------------------------------------------------

const Tensor& InferContext::value(size_t i) const {
  if (!has_input(i))
    throw ShapeError(str("[", op->name, "] input ", i, " is missing"));
  if (!inputs[i].value)
    throw ShapeError(str("[", op->name, "] input ", i, " (", i < op->inputs.size() ? op->inputs[i] : "",
                         ") decides the output shape and must be known before running "
                         "(a constant or computed from shapes); it is computed at run time"));
  return *inputs[i].value;
}

std::vector<int64_t> InferContext::int_values(size_t i) const {
  Tensor t = value(i).to(Device::cpu()).contiguous();
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::i64) {
    std::copy_n(t.data<int64_t>(), out.size(), out.begin());
  } else if (t.dtype() == DType::i32) {
    std::copy_n(t.data<int32_t>(), out.size(), out.begin());
  } else {
    throw DTypeError(str("[", op->name, "] input ", i, " should be i64 or i32, got ",
                         dtype_name(t.dtype())));
  }
  return out;
}

void InferContext::set_output(size_t i, Shape shape, DType dtype) {
  if (i >= outputs.size()) return;  // the node does not use this optional output
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(str("[", op->name, "] inferred a negative dimension: ", shape_str(shape)));
  shape_numel(shape);  // overflow check
  outputs[i].shape = std::move(shape);
  outputs[i].dtype = dtype;
  outputs[i].present = true;
}

}  // namespace porta
