// porta runtime — float64 reference execution of one op (tests, `porta check`).
#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"

namespace porta {
namespace {

// Runs a composite through references, keeping every value in f64 but remembering the
// dtype each value would have, so dtype-sensitive ops (Cast, compare) stay correct.
class ReferenceBuilder final : public GraphBuilder {
 public:
  ValueId push(Tensor t, DType d) {
    values_.push_back(std::move(t));
    dtypes_.push_back(d);
    return static_cast<ValueId>(values_.size() - 1);
  }
  Tensor typed(ValueId v) const {
    // Reference inputs are re-typed so inference sees the real dtypes.
    return values_.at(v).cast(dtypes_.at(v));
  }
  const Tensor& get(ValueId v) const { return values_.at(v); }
  std::vector<ValueId> add(std::string_view op, std::vector<ValueId> inputs, Attributes attrs,
                           int num_outputs) override {
    std::vector<Tensor> ins;
    for (ValueId v : inputs) ins.push_back(v < 0 ? Tensor() : typed(v));
    std::vector<DType> dts;
    std::vector<Tensor> outs = reference_op(op, ins, attrs, num_outputs, &dts);
    std::vector<ValueId> ids;
    for (size_t i = 0; i < outs.size(); ++i) ids.push_back(push(std::move(outs[i]), dts[i]));
    return ids;
  }
  ValueId constant(const Tensor& value) override {
    return push(value.cast(DType::f64), value.dtype());
  }
  const Shape& shape(ValueId v) const override { return values_.at(v).shape(); }
  DType dtype(ValueId v) const override { return dtypes_.at(v); }

 private:
  std::vector<Tensor> values_;
  std::vector<DType> dtypes_;
};

}  // namespace

std::vector<Tensor> reference_op(std::string_view op_name, const std::vector<Tensor>& inputs,
                                 const Attributes& given, int num_outputs,
                                 std::vector<DType>* out_dtypes) {
  const OpSchema* op = find_op(op_name);
  if (!op) throw Unsupported(str("[", op_name, "] ", describe_unknown_op(op_name)));
  Attributes attrs = complete_attributes(*op, given, "");
  if (num_outputs < 0) num_outputs = detail::default_output_count(*op, attrs);
  std::vector<Tensor> host(inputs.size());
  std::vector<ValueInfo> infos(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    infos[i].present = inputs[i].defined();
    if (!infos[i].present) continue;
    host[i] = inputs[i].to(Device::cpu()).contiguous();
    infos[i].shape = host[i].shape();
    infos[i].dtype = host[i].dtype();
    infos[i].value = &host[i];
  }
  std::vector<ValueInfo> outs = detail::infer_outputs(*op, attrs, infos, num_outputs, "");
  if (out_dtypes) {
    out_dtypes->clear();
    for (auto& o : outs) out_dtypes->push_back(o.dtype);
  }
  if (!op->reference) {
    if (!op->composite) throw Unsupported(str("[", op->name, "] has no reference"));
    ReferenceBuilder b;
    std::vector<ValueId> ids;
    for (auto& t : host) ids.push_back(t.defined() ? b.push(t.cast(DType::f64), t.dtype()) : -1);
    std::vector<ValueId> res = op->composite(b, ids, attrs);
    std::vector<Tensor> out;
    for (int i = 0; i < num_outputs && i < static_cast<int>(res.size()); ++i) out.push_back(b.get(res[i]));
    return out;
  }
  KernelContext ctx;
  ctx.op = op;
  ctx.attrs = &attrs;
  ctx.device = Device::cpu();
  ctx.backend = find_backend(DeviceType::cpu);
  for (auto& t : host) {
    ctx.inputs.push_back(t.defined() ? t.cast(DType::f64) : Tensor());
    ctx.source_dtypes.push_back(t.defined() ? t.dtype() : DType::f64);
  }
  for (auto& o : outs)
    ctx.outputs.push_back(o.present ? Tensor::zeros(o.shape, DType::f64) : Tensor());
  op->reference(ctx);
  return std::move(ctx.outputs);
}

}  // namespace porta
