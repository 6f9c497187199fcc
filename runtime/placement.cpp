// porta runtime — composite-versus-fallback weighing (docs/PLACEMENT.md).
//
// A dry run of the decomposition: a GraphBuilder that only infers shapes and asks the
// dispatcher where each part would run, adding up the bytes the parts' CPU fallbacks copy.
// Nothing is allocated or computed.
#include "runtime/placement.hpp"

#include <deque>

#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"

namespace porta::detail {
namespace {

size_t bytes_of(const ValueInfo& v) {
  return v.present ? static_cast<size_t>(shape_numel(v.shape)) * dtype_size(v.dtype) : 0;
}

// Values are tracked with where they are (device, cpu, or both after a copy), so a chain of
// parts on the cpu pays for its inputs once and for its results only where the device reads
// them, as the session's copy insertion does.
class DryBuilder final : public GraphBuilder {
 public:
  struct DryValue {
    ValueInfo info;
    bool constant = false;
    bool on_device = true, on_cpu = false;
  };

  DryBuilder(Device device, int depth) : device_(device), depth_(depth) {}
  ValueId push(DryValue v) {
    values_.push_back(std::move(v));
    return static_cast<ValueId>(values_.size() - 1);
  }
  // Makes value v available where a part runs, counting a copy when it is not there yet.
  void need(ValueId v, bool on_cpu) {
    DryValue& d = values_.at(v);
    if (d.constant) return;
    bool& here = on_cpu ? d.on_cpu : d.on_device;
    if (!here) bytes += bytes_of(d.info);
    here = true;
  }
  std::vector<ValueId> add(std::string_view op_name, std::vector<ValueId> inputs, Attributes attrs,
                           int num_outputs) override {
    const OpSchema* op = find_op(op_name);
    if (!op) throw Unsupported(str("[", op_name, "] ", describe_unknown_op(op_name), " used by a decomposition"));
    Attributes full = complete_attributes(*op, attrs, "");
    if (num_outputs < 0) num_outputs = default_output_count(*op, full);
    std::vector<ValueInfo> ins;
    bool all_constant = true;
    for (ValueId v : inputs) {
      ValueInfo info;
      if (v < 0) {
        info.present = false;
      } else {
        info = values_.at(v).info;
        all_constant = all_constant && values_.at(v).constant && values_.at(v).info.value;
      }
      ins.push_back(info);
    }
    std::vector<ValueInfo> outs = infer_outputs(*op, full, ins, num_outputs, "");
    std::vector<Tensor> folded;
    if (all_constant) {  // folded when the session compiles; later parts may read the values
      std::vector<Tensor> args;
      for (ValueId v : inputs) args.push_back(v < 0 ? Tensor() : *values_.at(v).info.value);
      folded = call_op(op->qualified_name(), args, full, num_outputs);
    }
    bool outputs_on_cpu = false;
    if (!all_constant) {  // constant parts are folded when the session compiles: no copies
      const Resolution& r = resolve(*op, device_, dispatch_dtype(*op, ins, outs));
      if (r.path == Path::composite && depth_ < 8) {
        DryBuilder inner(device_, depth_ + 1);
        std::vector<ValueId> ids;
        for (ValueId v : inputs) {
          if (v >= 0) need(v, false);
          ids.push_back(v < 0 ? -1 : inner.push(values_.at(v)));
        }
        for (ValueId v : op->composite(inner, ids, full))
          if (v >= 0) inner.need(v, false);
        bytes += inner.bytes;
      } else {
        outputs_on_cpu = r.path == Path::fallback;
        for (ValueId v : inputs)
          if (v >= 0) need(v, outputs_on_cpu);
      }
    }
    std::vector<ValueId> ids;
    for (size_t i = 0; i < outs.size(); ++i) {
      DryValue d;
      d.info = outs[i];
      if (i < folded.size() && folded[i].defined()) d.info.value = keep(folded[i]);
      d.constant = all_constant;
      d.on_cpu = outputs_on_cpu;
      d.on_device = !outputs_on_cpu;
      ids.push_back(push(d));
    }
    return ids;
  }
  ValueId constant(const Tensor& value) override {
    DryValue d;
    d.info.shape = value.shape();
    d.info.dtype = value.dtype();
    d.info.value = keep(value.to(Device::cpu()));
    d.constant = true;
    return push(d);
  }
  const Shape& shape(ValueId v) const override { return values_.at(v).info.shape; }
  DType dtype(ValueId v) const override { return values_.at(v).info.dtype; }

  size_t bytes = 0;

 private:
  // Host values of constants, at stable addresses for ValueInfo::value.
  const Tensor* keep(Tensor t) {
    constants_.push_back(std::move(t));
    return &constants_.back();
  }
  std::deque<Tensor> constants_;
  Device device_;
  int depth_;
  std::vector<DryValue> values_;
};

}  // namespace

size_t composite_copy_bytes(const OpSchema& op, const Attributes& attrs, const std::vector<ValueInfo>& inputs,
                            Device device) {
  if (!op.composite) return 0;
  DryBuilder b(device, 0);
  std::vector<ValueId> ids;
  for (auto& v : inputs) {
    DryBuilder::DryValue d;
    d.info = v;
    d.constant = v.value != nullptr;
    ids.push_back(v.present ? b.push(d) : -1);
  }
  for (ValueId v : op.composite(b, ids, attrs))  // results are needed on the device
    if (v >= 0) b.need(v, false);
  return b.bytes;
}

size_t fallback_copy_bytes(const std::vector<ValueInfo>& inputs, const std::vector<ValueInfo>& outputs) {
  size_t bytes = 0;
  for (auto& v : inputs)
    if (!v.value) bytes += bytes_of(v);
  for (auto& v : outputs) bytes += bytes_of(v);
  return bytes;
}

PlacementChoice weigh_composite(const OpSchema& op, const Attributes& attrs, const std::vector<ValueInfo>& inputs,
                                const std::vector<ValueInfo>& outputs, Device device, DType dtype, bool strict) {
  PlacementChoice c;
  if (device.type == DeviceType::cpu || strict || !op.composite) return c;
  const Resolution& on_cpu = resolve(op, Device::cpu(), dtype);
  if (on_cpu.path != Path::native) return c;
  try {
    c.composite_bytes = composite_copy_bytes(op, attrs, inputs, device);
  } catch (const Error&) {
    return c;  // the estimate is an optimisation: the decomposition itself reports real errors
  }
  if (c.composite_bytes == 0) return c;
  c.fallback_bytes = fallback_copy_bytes(inputs, outputs);
  c.fallback = c.fallback_bytes < c.composite_bytes;
  c.reason = str("its decomposition on ", device.str(), " would copy ", c.composite_bytes,
                 " B/run through CPU fallbacks of its parts; the whole op on cpu copies ", c.fallback_bytes,
                 " B/run: ", c.fallback ? "runs on cpu with copies" : "keeps the decomposition");
  return c;
}

}  // namespace porta::detail
