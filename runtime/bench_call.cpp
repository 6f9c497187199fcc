// porta runtime — benchmark calls: case inputs, work counts, and repeatable prepared calls.
#include "runtime/bench_call.hpp"

#include <cmath>
#include <random>

#include "porta/error.hpp"
#include "porta/half.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/kernel_call.hpp"

namespace porta::bench {

Tensor make_case_input(const InputSpec& spec, DType case_dtype, uint64_t seed) {
  if (spec.absent) return Tensor();
  DType dt = spec.dtype.value_or(case_dtype);
  if (!spec.values.empty()) return Tensor::from_values(spec.values, spec.shape, dt);
  Tensor t = Tensor::empty(spec.shape, dt);
  size_t n = static_cast<size_t>(t.numel());
  std::mt19937_64 rng(seed);
  bool integers = spec.integers || !is_floating(dt);
  double lo = spec.lo, hi = spec.hi;
  if (dt == DType::boolean) lo = 0, hi = 1;
  if (dt == DType::u8) lo = std::max(lo, 0.0);
  // Written straight into the tensor's element type: the large perf inputs (16M elements)
  // would otherwise cost a temporary vector of doubles each.
  visit_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    if (integers) {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(std::ceil(lo)),
                                               static_cast<int64_t>(std::floor(hi)));
      for (size_t i = 0; i < n; ++i) p[i] = from_double<T>(static_cast<double>(d(rng)));
    } else {
      std::uniform_real_distribution<double> d(lo, hi);
      for (size_t i = 0; i < n; ++i) p[i] = from_double<T>(d(rng));
    }
  });
  if (spec.transposed && t.rank() >= 2) {
    // Same logical values stored transposed: a non-contiguous view, as the conformance tests use.
    Tensor stored = t.transpose(-1, -2).contiguous();
    t = stored.transpose(-1, -2);
  }
  return t;
}

namespace {

std::vector<ValueInfo> output_infos(const OpSchema& op, const std::vector<ValueInfo>& inputs,
                                    const Attributes& attrs, int num_outputs) {
  if (num_outputs < 0) num_outputs = detail::default_output_count(op, attrs);
  return detail::infer_outputs(op, attrs, inputs, num_outputs, "");
}

WorkCount count(const OpSchema& op, const std::vector<ValueInfo>& ins, const std::vector<ValueInfo>& outs,
                const Attributes& attrs) {
  WorkCount w;
  std::vector<Shape> in_shapes, out_shapes;
  for (auto& v : ins) {
    in_shapes.push_back(v.present ? v.shape : Shape{0});
    if (v.present) w.bytes += static_cast<double>(shape_numel(v.shape)) * dtype_size(v.dtype);
  }
  for (auto& v : outs) {
    out_shapes.push_back(v.present ? v.shape : Shape{0});
    if (v.present) w.bytes += static_cast<double>(shape_numel(v.shape)) * dtype_size(v.dtype);
  }
  if (op.flops) w.flops = op.flops(in_shapes, out_shapes, attrs);
  return w;
}

}  // namespace

WorkCount count_work(const OpSchema& op, const std::vector<Shape>& input_shapes,
                     const std::vector<DType>& input_dtypes, const Attributes& given, int num_outputs) {
  if (input_shapes.size() != input_dtypes.size())
    throw InvalidArgument(str("[bench] ", input_shapes.size(), " input shapes but ", input_dtypes.size(),
                              " dtypes for ", op.name));
  if (!op.host_inputs.empty())
    throw InvalidArgument(str("[bench] ", op.name, " needs input values to size its outputs; "
                              "count its work from tensors"));
  Attributes attrs = complete_attributes(op, given, "");
  std::vector<ValueInfo> ins(input_shapes.size());
  for (size_t i = 0; i < ins.size(); ++i) ins[i].shape = input_shapes[i], ins[i].dtype = input_dtypes[i];
  return count(op, ins, output_infos(op, ins, attrs, num_outputs), attrs);
}

WorkCount count_work(const OpSchema& op, const std::vector<Tensor>& inputs, const Attributes& given,
                     int num_outputs) {
  Attributes attrs = complete_attributes(op, given, "");
  std::vector<ValueInfo> ins(inputs.size());
  std::vector<Tensor> host(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ins[i].present = inputs[i].defined();
    if (!ins[i].present) continue;
    ins[i].shape = inputs[i].shape();
    ins[i].dtype = inputs[i].dtype();
    for (int h : op.host_inputs)
      if (h == static_cast<int>(i)) {
        host[i] = inputs[i].to(Device::cpu()).contiguous();
        ins[i].value = &host[i];
      }
  }
  return count(op, ins, output_infos(op, ins, attrs, num_outputs), attrs);
}

PreparedCall::PreparedCall(const OpSchema& op, const std::vector<Tensor>& host_inputs, const Attributes& attrs,
                           int num_outputs, Device device)
    : op_(&op), attrs_(complete_attributes(op, attrs, "")), num_outputs_(num_outputs), device_(device) {
  for (auto& t : host_inputs) inputs_.push_back(t.defined() ? t.to(device) : Tensor());
  std::vector<ValueInfo> ins(inputs_.size());
  std::vector<Tensor> host_values(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    ins[i].present = inputs_[i].defined();
    if (!ins[i].present) continue;
    ins[i].shape = inputs_[i].shape();
    ins[i].dtype = inputs_[i].dtype();
    for (int h : op.host_inputs)
      if (h == static_cast<int>(i)) {
        host_values[i] = host_inputs[i].contiguous();
        ins[i].value = &host_values[i];
      }
  }
  if (num_outputs_ < 0) num_outputs_ = detail::default_output_count(op, attrs_);
  std::vector<ValueInfo> outs = output_infos(op, ins, attrs_, num_outputs_);
  DType dtype = detail::dispatch_dtype(op, ins, outs);
  ctx_.op = op_;
  ctx_.attrs = &attrs_;
  ctx_.device = device;
  ctx_.backend = &backend_for(device);
  ctx_.inputs = inputs_;
  resolution_ = resolve_call(ctx_, dtype);
  if (resolution_.path == Path::unsupported) throw Unsupported(resolution_.reason);
  if (resolution_.path == Path::fallback && strict())
    throw Unsupported(str("[", op.name, "] strict mode: no ", device.str(), " kernel (", resolution_.reason, ")"));
  if (resolution_.path == Path::native)
    for (auto& info : outs) outputs_.push_back(Tensor::empty(info.shape, info.dtype, device));
  ctx_.outputs = outputs_;
}

void PreparedCall::run() {
  if (resolution_.path == Path::native) {
    // Fresh views of the device inputs each time: a kernel that needs contiguous inputs pays
    // for the copy on every call, as it would in a session.
    ctx_.attrs = &attrs_;
    ctx_.inputs = inputs_;
    ctx_.outputs = outputs_;
    detail::run_kernel(*resolution_.kernel, ctx_);
    return;
  }
  outputs_ = call_op(op_->qualified_name(), inputs_, attrs_, num_outputs_);
}

}  // namespace porta::bench
