// porta runtime — compiling a graph for one device and one set of input shapes:
// shape inference and constant folding, resolution per node (native / composite / CPU
// fallback), copies at device boundaries, and liveness-based buffer reuse. The precision
// policy's part (casts at precision boundaries, lowering) is runtime/session_compile_precision.cpp.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/placement.hpp"
#include "runtime/precision.hpp"
#include "ops/shape_util.hpp"
#include "runtime/session_compiler.hpp"
#include "runtime/session_plan.hpp"

namespace porta::detail {
namespace compiling {


std::vector<ValueId> PlanBuilder::add(std::string_view op_name, std::vector<ValueId> inputs,
                                      Attributes attrs, int num_outputs) {
  const OpSchema* op = find_op(op_name);
  if (!op) throw Unsupported(str("[", op_name, "] ", describe_unknown_op(op_name), " used by a decomposition"));
  Attributes full = complete_attributes(*op, attrs, "");
  if (num_outputs < 0) num_outputs = default_output_count(*op, full);
  std::vector<int> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(c_.new_value());
  c_.process(*op, full, inputs, outs, str(prefix_, "/", op_name, "_", counter_++), plan_node_, 1);
  return outs;
}

ValueId PlanBuilder::constant(const Tensor& value) {
  int v = c_.new_value();
  CValue& cv = c_.value(v);
  cv.constant = value.to(Device::cpu());
  cv.shape = value.shape();
  cv.dtype = value.dtype();
  return v;
}
const Shape& PlanBuilder::shape(ValueId v) const { return c_.values_.at(v).shape; }
DType PlanBuilder::dtype(ValueId v) const { return c_.values_.at(v).dtype; }


int Compiler::slot_on(int v, Device device, int plan_node) {
  CValue& cv = values_.at(v);
  if (auto it = cv.on.find(device); it != cv.on.end()) return it->second;
  if (cv.constant.defined()) {
    int s = new_slot(cv.shape, cv.dtype, device);
    plan_->slots[s].constant = cv.constant.to(device);
    cv.on[device] = s;
    return s;
  }
  if (cv.home < 0) throw InvalidModel("[session] internal: value used before it is computed");
  int src = cv.home;
  int dst = new_slot(cv.shape, cv.dtype, device);
  Step step;
  step.kind = StepKind::copy;
  Slot& from = plan_->slots[src];
  step.name = str("copy ", from.device.str(), "->", device.str());
  step.op = "Copy";
  step.device = device.type == DeviceType::cpu ? from.device : device;
  step.inputs = {src};
  step.outputs = {dst};
  step.plan_node = plan_node;
  size_t bytes = static_cast<size_t>(shape_numel(cv.shape)) * dtype_size(cv.dtype);
  // Copies caused by a CPU fallback are charged to the fallback node.
  int charged = plan_node >= 0 && plan_->nodes[plan_node].path == Path::fallback ? plan_node : cv.origin;
  if (charged >= 0 && plan_->nodes[charged].path == Path::fallback) plan_->nodes[charged].fallback_bytes += bytes;
  plan_->steps.push_back(std::move(step));
  values_.at(v).on[device] = dst;
  return dst;
}

// The slot holding value `v` on the host for a device kernel that reads it there
// (OpSchema::host_read_inputs), or -1: a constant's host tensor, an output of the host prologue,
// or an index graph input, bound to the caller's tensor on the cpu as the prologue's are. Each
// is filled before any device step runs; another value would have to be read back.
int Compiler::host_copy_slot(int v, int plan_node) {
  CValue& cv = values_.at(v);
  if (cv.constant.defined()) return slot_on(v, Device::cpu(), plan_node);
  if (!cv.host_side) return -1;
  if (cv.graph_input >= 0) bind_input_on_host(cv);
  auto it = cv.on.find(Device::cpu());
  return it != cv.on.end() ? it->second : -1;
}

void Compiler::bind_input_on_host(CValue& cv) {
  if (cv.on.count(Device::cpu())) return;
  int hs = new_slot(cv.shape, cv.dtype, Device::cpu());
  plan_->slots[hs].graph_input = cv.graph_input;
  plan_->host_input_slots.emplace_back(cv.graph_input, hs);
  cv.on[Device::cpu()] = hs;
}

void Compiler::emit_kernel(const OpSchema& op, const Attributes& attrs, const KernelDef* kernel,
                           Device device, const std::vector<int>& ins, const std::vector<int>& outs,
                           const std::string& name, int plan_node) {
  Step step;
  step.kind = StepKind::kernel;
  step.name = name;
  step.op = op.name;
  step.device = device;
  step.kernel = kernel;
  step.plan_node = plan_node;
  for (size_t i = 0; i < ins.size(); ++i) {
    int v = ins[i];
    if (v < 0 || !values_.at(v).present) {
      step.inputs.push_back(-1);
      continue;
    }
    // A constant the kernel reads on the host (Slice's starts, Reshape's shape...) stays there:
    // on a device, every run would read it back and wait for the device.
    bool host = values_.at(v).constant.defined() &&
                std::find(op.host_inputs.begin(), op.host_inputs.end(), static_cast<int>(i)) != op.host_inputs.end();
    step.inputs.push_back(slot_on(v, host ? Device::cpu() : device, plan_node));
  }
  if (device.type != DeviceType::cpu && !op.host_read_inputs.empty()) {
    step.host_copy_slots.assign(step.inputs.size(), -1);
    for (int i : op.host_read_inputs)
      if (i >= 0 && static_cast<size_t>(i) < ins.size() && step.inputs[i] >= 0)
        step.host_copy_slots[i] = host_copy_slot(ins[i], plan_node);
  }
  for (int v : outs) {
    if (v < 0 || !values_.at(v).present) {
      step.outputs.push_back(-1);
      continue;
    }
    CValue& cv = values_.at(v);
    int s = new_slot(cv.shape, cv.dtype, device);
    cv.home = s;
    cv.on[device] = s;
    cv.origin = plan_node;
    step.outputs.push_back(s);
  }
  for (size_t i = 0; i < step.inputs.size() && i < 64; ++i)
    if (step.inputs[i] >= 0 && plan_->slots[step.inputs[i]].constant.defined()) step.constant_inputs |= uint64_t{1} << i;
  plan_->attrs.push_back(attrs);
  step.ctx.op = &op;
  step.ctx.attrs = &plan_->attrs.back();
  step.ctx.device = device;
  step.ctx.backend = &backend_for(device);
  step.ctx.inputs.resize(step.inputs.size());
  step.ctx.outputs.resize(step.outputs.size());
  if (!step.host_copy_slots.empty()) step.ctx.host_copies.resize(step.inputs.size());
  plan_->steps.push_back(std::move(step));
}

void Compiler::process_node(const OpSchema& op, const Attributes& attrs, const std::vector<int>& ins,
                            const std::vector<int>& outs, const std::string& name, int plan_node, int depth) {
  const bool f32_destination = std::exchange(f32_destination_, false);
  if (depth > 32) throw Unsupported(str("[", op.name, "] decomposition nests too deeply"));
  std::vector<ValueInfo> infos(ins.size());
  bool all_constant = true, from_input = false;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i] < 0) {
      infos[i].present = false;
      continue;
    }
    CValue& cv = values_.at(ins[i]);
    infos[i].shape = cv.shape;
    infos[i].dtype = cv.dtype;
    infos[i].present = cv.present;
    if (cv.constant.defined()) infos[i].value = &cv.constant;
    else all_constant = false;
    from_input |= cv.from_input;
  }
  // Values known only from a shape-deciding graph input are folded where shapes need them
  // (an output read for a shape later, or an op whose output shape follows its inputs'
  // values); everything else runs on the device as usual, so one such input does not move
  // the whole model onto the cpu.
  // Also where a device kernel reads the values on the host (OpSchema::host_read_inputs):
  // folded, they are there already, and need not be read back from the device each run.
  bool for_host_reads = false;
  if (all_constant && from_input && depth == 0 && op.host_inputs.empty()) {
    bool for_shapes = false;
    for (int v : outs)
      if (v >= 0 && static_cast<size_t>(v) < host_needed_.size()) {
        for_shapes |= host_needed_[v];
        for_host_reads |= host_read_needed_[v];
      }
    for_host_reads = for_host_reads && !for_shapes;
    all_constant = for_shapes || for_host_reads;
  }
  auto mark = [&](Path path, std::string reason, Device device) {
    if (depth == 0 && plan_node >= 0) {
      NodePlan& np = plan_->nodes[plan_node];
      np.path = path;
      np.reason = std::move(reason);
      np.device = device;
    }
  };

  // Shape reads only its input's shape: always known here.
  if (op.name == "Shape" && op.domain.empty()) {
    std::vector<int64_t> d = opdef::shape_dims(infos.at(0).shape, attrs);
    std::vector<double> dims(d.begin(), d.end());
    CValue& out = values_.at(outs.at(0));
    out.constant = Tensor::from_values(dims, {static_cast<int64_t>(d.size())}, DType::i64);
    out.shape = out.constant.shape();
    out.dtype = DType::i64;
    mark(Path::folded, "shape known when the session compiles", Device::cpu());
    return;
  }
  // Identity of a constant is that constant, the same storage: PyTorch exports weights shared
  // between layers (a stack made by copying one layer, tied weights) as one initializer read
  // through Identity nodes, and a copy per reader would hold one set of weights per layer,
  // packed once per layer too (the cpu's packed-weight caches key on the storage).
  if (all_constant && op.name == "Identity" && op.domain.empty() && ins.size() == 1 && outs.size() == 1 &&
      outs[0] >= 0) {
    const CValue& in = values_.at(ins[0]);
    CValue& cv = values_.at(outs[0]);
    cv.present = in.present;
    cv.constant = in.constant;
    cv.shape = in.shape;
    cv.dtype = in.dtype;
    cv.from_input = from_input;
    mark(Path::folded, "the constant it passes on, shared: no copy", Device::cpu());
    return;
  }
  // Constant inputs: compute once now, on the CPU.
  if (all_constant) {
    std::vector<Tensor> args;
    for (int v : ins) args.push_back(v < 0 ? Tensor() : values_.at(v).constant);
    std::vector<Tensor> res;
    try {
      res = call_op(op.qualified_name(), args, attrs, static_cast<int>(outs.size()));
    } catch (...) {
      rethrow_with_context(str("node '", name, "'"));
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i] < 0) continue;
      CValue& cv = values_.at(outs[i]);
      cv.present = i < res.size() && res[i].defined();
      if (!cv.present) continue;
      cv.constant = res[i];
      cv.shape = res[i].shape();
      cv.dtype = res[i].dtype();
      cv.from_input = from_input;
    }
    mark(Path::folded,
         for_host_reads ? "computed on the cpu when the plan is made: a device kernel reads its values there, "
                       "and its inputs follow from input values that decide shapes (one plan per distinct value)"
         : from_input ? "computed on the cpu when the plan is made: shapes depend on it, and its inputs follow "
                        "from input values that decide shapes (one plan per distinct value)"
                      : "inputs are constants: computed once when the session compiles",
         Device::cpu());
    return;
  }

  std::vector<ValueInfo> out_infos;
  try {
    out_infos = infer_outputs(op, attrs, infos, static_cast<int>(outs.size()), name);
  } catch (...) {
    rethrow_with_context(str("node '", name, "'"));
  }
  // The precision policy's f32 destination: the kernel is told by `porta_f32_output`.
  Attributes marked;
  if (f32_destination) {
    for (ValueInfo& o : out_infos)
      if (o.present && o.dtype == low_) o.dtype = DType::f32;
    marked = attrs;
    marked.set("porta_f32_output", int64_t{1});
  }
  const Attributes& call_attrs = f32_destination ? marked : attrs;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i] < 0) continue;
    CValue& cv = values_.at(outs[i]);
    cv.present = out_infos[i].present;
    cv.shape = out_infos[i].shape;
    cv.dtype = out_infos[i].dtype;
  }

  // Reshape-like ops (and Identity, inference Dropout) view their input's memory: no kernel,
  // no copy. Only when output 0 is their one output in use (drop_unread_outputs) and every
  // other input present is known now (its checks, e.g. Dropout's training_mode, are done).
  bool view_only = true;
  for (size_t i = 1; i < outs.size(); ++i) view_only &= outs[i] < 0;
  for (size_t i = 1; i < ins.size(); ++i) view_only &= ins[i] < 0 || infos[i].value != nullptr;
  if (op.alias_input0 && view_only && !outs.empty() && outs[0] >= 0 && ins.at(0) >= 0) {
    CValue& src = values_.at(ins[0]);
    CValue& dst = values_.at(outs[0]);
    if (src.home >= 0 && dst.dtype == src.dtype && shape_numel(dst.shape) == shape_numel(src.shape)) {
      int s = new_slot(dst.shape, dst.dtype, plan_->slots[src.home].device);
      plan_->slots[s].alias_of = src.home;
      dst.home = s;
      dst.on[plan_->slots[s].device] = s;
      dst.origin = plan_node;
      Step step;
      step.kind = StepKind::view;
      step.name = name;
      step.op = op.name;
      step.device = plan_->slots[s].device;
      step.inputs = {src.home};
      step.outputs = {s};
      step.plan_node = plan_node;
      // A view of a host prologue value is part of the prologue.
      step.prologue = src.host_side && step.device.type == DeviceType::cpu;
      dst.host_side = step.prologue;
      dst.mask_like = step.prologue && src.mask_like;
      plan_->steps.push_back(std::move(step));
      mark(Path::native, "views its input's memory (no copy)", plan_->slots[s].device);
      return;
    }
  }

  // A shape-only call of the node on `on`, as kernels' supports() see it.
  auto call_probe = [&](Device on) {
    KernelContext probe;
    probe.op = &op;
    probe.attrs = &call_attrs;
    probe.device = on;
    probe.backend = &backend_for(on);
    for (size_t i = 0; i < ins.size(); ++i)
      probe.inputs.push_back(infos[i].present ? shape_probe(infos[i].shape, infos[i].dtype) : Tensor());
    for (auto& o : out_infos) probe.outputs.push_back(o.present ? shape_probe(o.shape, o.dtype) : Tensor());
    return probe;
  };
  const PrologueRule prologue =
      depth == 0 && !f32_destination ? place_on_host(infos, out_infos, ins) : PrologueRule{};
  if (prologue.place) {
    Resolution hr = resolve_call(call_probe(Device::cpu()), dispatch_dtype(op, infos, out_infos));
    if (hr.path == Path::native) {
      // Graph inputs it reads: the caller's tensor, bound on the cpu (no copy from the device).
      for (int v : ins)
        if (v >= 0 && values_.at(v).graph_input >= 0) bind_input_on_host(values_.at(v));
      emit_kernel(op, call_attrs, hr.kernel, Device::cpu(), ins, outs, name, plan_node);
      plan_->steps.back().prologue = true;
      for (int v : outs)
        if (v >= 0) {
          values_.at(v).host_side = true;
          values_.at(v).mask_like = prologue.masks && is_floating(values_.at(v).dtype);
        }
      mark(Path::native,
           str(hr.reason, "; in the host prologue: its inputs are graph inputs, constants and masks made from them, so it runs on the cpu "
                          "before the device's work (a small op costs a device a whole dispatch)"),
           Device::cpu());
      return;
    }
  }

  Device device = options_.device;
  DType dtype = dispatch_dtype(op, infos, out_infos);
  KernelContext probe = call_probe(device);
  // Which inputs are session constants, as the step's calls will say (a kernel may take only
  // calls whose weights it can prepare once).
  for (size_t i = 0; i < ins.size() && i < 64; ++i)
    if (ins[i] >= 0 && values_.at(ins[i]).present && values_.at(ins[i]).constant.defined())
      probe.constant_inputs |= uint64_t{1} << i;
  Resolution r = resolve_call(probe, dtype);
  if (r.path == Path::fallback && options_.strict)
    throw Unsupported(str("[", op.name, "] node '", name, "': strict mode forbids running on the CPU instead of ",
                          device.str(), ": ", r.reason));
  switch (r.path) {
    case Path::native: {
      const std::string fused = attrs.get_string("porta_activation", "");
      std::string reason = r.reason;
      for (size_t i = 0; i < ins.size() && i < op.inputs.size(); ++i)
        if (ins[i] >= 0 && op.inputs[i].rfind("porta_residual", 0) == 0)
          reason += "; adds the other input of the Add that followed it (fused)";
      if (!fused.empty()) reason += str("; applies the ", fused, " that followed it (fused)");
      if (attrs.has("porta_taps_of"))
        reason += str("; computes the ", shape_str(attrs.get_ints("kernel_shape")), " taps of its ",
                      shape_str(attrs.get_ints("porta_taps_of")), " kernel that reach the input (the others read only padding)");
      mark(Path::native, reason, device);
      emit_kernel(op, call_attrs, r.kernel, device, ins, outs, name, plan_node);
      return;
    }
    case Path::fallback:
      mark(Path::fallback, r.reason, Device::cpu());
      emit_kernel(op, call_attrs, r.kernel, Device::cpu(), ins, outs, name, plan_node);
      return;
    case Path::composite: {
      // A composite writes its outputs in its parts' dtypes: the f32 destination is asked for
      // only where every kernel of the device declares it, so it never comes here.
      if (f32_destination)
        throw Unsupported(str("[", op.name, "] node '", name, "': internal: an f32 destination needs a kernel, ", r.reason));
      // Weigh the decomposition's own CPU fallbacks against running the whole op on the cpu.
      PlacementChoice w;
      try {
        w = weigh_composite(op, attrs, infos, out_infos, device, dtype, options_.strict);
      } catch (...) {
        rethrow_with_context(str("node '", name, "' (decomposition)"));
      }
      if (w.fallback) {
        mark(Path::fallback, str(r.reason, "; but ", w.reason), Device::cpu());
        emit_kernel(op, attrs, resolve(op, Device::cpu(), dtype).kernel, Device::cpu(), ins, outs, name, plan_node);
        return;
      }
      std::string reason = w.reason.empty() ? r.reason : str(r.reason, "; ", w.reason);
      mark(Path::composite, reason, device);
      PlanBuilder builder(*this, name, plan_node);
      std::vector<ValueId> res;
      const size_t first_step = plan_->steps.size();
      try {
        res = op.composite(builder, ins, attrs);
      } catch (...) {
        rethrow_with_context(str("node '", name, "' (decomposition)"));
      }
      // Say where the decomposition's ops run: on a device without kernels for them (f64 on
      // most Vulkan devices) they run on the cpu, and the node with them.
      size_t kernels = 0, elsewhere = 0;
      for (size_t k = first_step; k < plan_->steps.size(); ++k) {
        const Step& st = plan_->steps[k];
        if (st.kind != StepKind::kernel) continue;
        ++kernels;
        elsewhere += st.device != device;
      }
      if (elsewhere && elsewhere == kernels)
        mark(Path::composite, str(reason, "; but each of its ", kernels, " op(s) runs on cpu with copies (", device.str(),
                                  " takes none of them in ", dtype_name(dtype), ")"),
             Device::cpu());
      else if (elsewhere)
        mark(Path::composite, str(reason, "; ", elsewhere, " of its ", kernels, " ops run on cpu with copies"), device);
      for (size_t i = 0; i < outs.size() && i < res.size(); ++i) {
        if (outs[i] < 0) continue;
        CValue produced = values_.at(res[i]);
        CValue& cv = values_.at(outs[i]);
        cv.constant = produced.constant;
        cv.home = produced.home;
        cv.on = produced.on;
        cv.shape = produced.shape;
        cv.dtype = produced.dtype;
        cv.origin = produced.origin;
        cv.lowered = produced.lowered;
      }
      return;
    }
    default:
      throw Unsupported(str(r.reason, " (node '", name, "')"));
  }
}

std::unique_ptr<Plan> Compiler::run(const std::vector<Shape>& input_shapes,
                                    const std::vector<Tensor>& input_values) {
  values_.resize(graph_.values.size());
  host_needed_ = shape_deciding_values(graph_);
  host_read_needed_ = host_read_values(graph_);
  low_ = low_precision_dtype(options_.precision, options_.device);
  low_in_f32_ = low_precision_in_f32(low_, options_.device);
  if (std::string why = low_precision_not_fast(low_, options_.device); !why.empty() && low_in_f32_.empty())
    low_slow_ = "; " + why;
  if (low_ != DType::f32) {
    read_low_.assign(graph_.values.size(), false);
    for (const Node& n : graph_.nodes)
      if (precision_class(*n.op) != PrecisionClass::keep_f32 && precision_class(*n.op) != PrecisionClass::lower_inside)
        for (int v : n.inputs)
          if (v >= 0) read_low_[v] = true;
  }
  for (size_t i = 0; i < graph_.values.size(); ++i) {
    const Value& gv = graph_.values[i];
    values_[i].dtype = gv.dtype;
    values_[i].shape = gv.shape;
    if (gv.constant.defined()) {
      values_[i].constant = gv.constant;
      values_[i].weight = true;
    }
  }
  for (size_t k = 0; k < graph_.inputs.size(); ++k) {
    int v = graph_.inputs[k];
    CValue& cv = values_[v];
    cv.shape = input_shapes.at(k);
    int s = new_slot(cv.shape, cv.dtype, options_.device);
    plan_->slots[s].graph_input = static_cast<int>(k);
    if (k < input_values.size() && input_values[k].defined()) {
      cv.constant = input_values[k];
      cv.from_input = true;
    }
    cv.home = s;
    cv.on[options_.device] = s;
    cv.graph_input = static_cast<int>(k);
    // Index and mask inputs (i64, i32, bool: token ids, attention masks) may feed the host
    // prologue; float and 8-bit inputs (images, quantized data) are the device's work.
    cv.host_side = options_.device.type != DeviceType::cpu && !options_.strict &&
                   (cv.dtype == DType::i64 || cv.dtype == DType::i32 || cv.dtype == DType::boolean);
    plan_->input_slots.push_back(s);
  }
  for (const Node& n : graph_.nodes) {
    NodePlan np;
    np.node = n.name;
    np.op = n.op->qualified_name();
    np.device = options_.device;
    plan_->nodes.push_back(np);
  }
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& n = graph_.nodes[i];
    process(*n.op, n.attrs, n.inputs, n.outputs, n.name, static_cast<int>(i), 0);
  }
  for (int v : graph_.outputs) {
    CValue& cv = values_.at(v);
    if (!cv.present)
      throw InvalidModel(str("[session] graph output '", graph_.values[v].name, "' is an absent optional output"));
    // Outputs keep the dtype the model exports them in.
    int s = slot_on(cv.lowered ? twin(v, DType::f32, -1) : v, options_.device, -1);
    plan_->output_slots.push_back(s);
  }
  host_prologue_first();
  if (options_.keep_values) {
    keep_node_values();
  } else {
    drop_unread_steps();
    merge_movement_chains();
    drop_unread_steps();
    concat_prefixes_in_place();
    concat_in_place();
    slice_in_place();
    chain_private_layouts(*plan_);
    concat_into_batch_norm(*plan_);
    read_chains_in_place();
    write_chains_in_place();
  }
  note_constant_bytes();
  plan_memory();
  return std::move(plan_);
}

// Every kernel step learns how many bytes of constants its device holds for the steps of the
// plan (KernelContext::session_constant_bytes), each constant counted once: whether all the
// session's weights stay in cache between runs.
void Compiler::note_constant_bytes() {
  std::map<Device, std::set<std::pair<const Storage*, int64_t>>> seen;
  std::map<Device, int64_t> bytes;
  for (const Step& step : plan_->steps)
    for (int s : step.inputs) {
      if (s < 0) continue;
      const Slot& slot = plan_->slots[static_cast<size_t>(s)];
      if (!slot.constant.defined() ||
          !seen[slot.device].insert({slot.constant.storage().get(), slot.constant.offset()}).second)
        continue;
      bytes[slot.device] += static_cast<int64_t>(slot.constant.nbytes());
    }
  for (Step& step : plan_->steps)
    if (step.kind == StepKind::kernel) step.ctx.session_constant_bytes = bytes[step.device];
}

// The host prologue (sessions on a device other than the cpu, not strict): a node whose
// inputs are constants and index or mask values the host knows before the device's work
// starts (i64, i32 and bool graph inputs, and such outputs of other prologue nodes), at least
// one of them not a constant, and whose outputs are small. Masks and positions computed from
// token ids, and the embedding rows they select, are such nodes: on the device each would
// cost a dispatch; here they run on the cpu ahead of the device's steps, and only the values
// a device step reads are uploaded. Of the float values it makes, only mask-like ones (from
// index and mask values and scalar constants alone: a mask turned into 0 / -inf, or scaled
// by a constant) are read by it again; what follows from any other (an embedding row) is the
// device's work, so the model itself never moves to the host.

PrologueRule Compiler::place_on_host(const std::vector<ValueInfo>& infos, const std::vector<ValueInfo>& out_infos,
                                     const std::vector<int>& ins) const {
  if (options_.device.type == DeviceType::cpu || options_.strict) return {};
  std::vector<PrologueInput> in;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i] < 0 || !infos[i].present) continue;
    const CValue& cv = values_.at(ins[i]);
    in.push_back({cv.constant.defined() ? &cv.constant : nullptr, is_floating(infos[i].dtype), cv.host_side, cv.mask_like});
  }
  std::vector<int64_t> numels;
  for (const ValueInfo& o : out_infos)
    if (o.present) numels.push_back(shape_numel(o.shape));
  return prologue_rule(in, numels);
}

// Prologue steps first, each group in its order: their inputs are graph inputs, constants
// and other prologue steps' outputs, so none waits for a device step, and the device's
// steps then run as one batch.
void Compiler::host_prologue_first() {
  std::stable_partition(plan_->steps.begin(), plan_->steps.end(), [](const Step& s) { return s.prologue; });
}

// Steps whose outputs nothing reads: what a node computes only for consumers that compiling
// folded away (a Transpose whose one reader is a Shape, as PyTorch's export writes for the
// heads of attention). They are dropped; the node's plan entry says so. Graph outputs and the
// steps they need stay, and so does everything under keep_values (values() reports them).
void Compiler::drop_unread_steps() {
  std::vector<Step>& steps = plan_->steps;
  std::vector<bool> read(plan_->slots.size(), false);
  for (int s : plan_->output_slots) read.at(s) = true;
  std::vector<bool> live(steps.size(), false);
  for (size_t k = steps.size(); k-- > 0;) {
    for (int s : steps[k].outputs) live[k] = live[k] || (s >= 0 && read[s]);
    if (!live[k]) continue;
    for (int s : steps[k].inputs)
      if (s >= 0) read[s] = true;
  }
  std::vector<bool> node_runs(plan_->nodes.size(), false), node_dropped(plan_->nodes.size(), false), dead(steps.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    dead[k] = !live[k];
    if (steps[k].plan_node >= 0) (live[k] ? node_runs : node_dropped)[steps[k].plan_node] = true;
  }
  erase_steps(steps, dead);
  for (size_t n = 0; n < plan_->nodes.size(); ++n)
    if (node_dropped[n] && !node_runs[n])
      plan_->nodes[n].reason += "; not run: nothing that runs reads its outputs (their readers were folded)";
}

void Compiler::keep_node_values() {
  for (const Node& n : graph_.nodes)
    for (int v : n.outputs) {
      if (v < 0 || !values_.at(v).present) continue;
      const CValue& cv = values_[v];
      if (cv.constant.defined()) plan_->kept_constants.emplace_back(graph_.values[v].name, cv.constant);
      else if (cv.home >= 0) plan_->kept_slots.emplace_back(graph_.values[v].name, cv.home);
    }
}

void Compiler::plan_memory() {
  auto& slots = plan_->slots;
  auto root = [&](int s) {
    while (slots[s].alias_of >= 0) s = slots[s].alias_of;
    return s;
  };
  for (int s : plan_->output_slots) slots[root(s)].graph_output = true;
  // Kept values are not pooled: like graph outputs they get fresh memory each run.
  for (auto& kept : plan_->kept_slots)
    if (slots[root(kept.second)].graph_input < 0) slots[root(kept.second)].graph_output = true;
  std::vector<int> last_use(slots.size(), -1);
  for (size_t i = 0; i < plan_->steps.size(); ++i) {
    for (int s : plan_->steps[i].inputs)
      if (s >= 0) last_use[root(s)] = static_cast<int>(i);
    for (int s : plan_->steps[i].host_copy_slots)
      if (s >= 0) last_use[root(s)] = static_cast<int>(i);
  }
  for (size_t s = 0; s < slots.size(); ++s) slots[s].last_use = last_use[s];
  auto pooled = [&](int s) {
    const Slot& sl = slots[s];
    return sl.alias_of < 0 && !sl.constant.defined() && sl.graph_input < 0 && !sl.graph_output;
  };
  // Greedy best-fit reuse: a buffer is free again after the last step that reads its value.
  std::vector<int> free_list;
  for (size_t i = 0; i < plan_->steps.size(); ++i) {
    Step& step = plan_->steps[i];
    std::vector<int> taken = step.outputs;
    if (step.writes_through) taken.push_back(step.inputs[0]);  // written through its view later
    for (int out : taken) {
      // A block of another slot's memory (Concat in place): that slot's buffer is taken at
      // the first step writing any of its blocks.
      const int s = out >= 0 && slots[out].alias_offset >= 0 ? root(out) : out;
      if (s < 0 || !pooled(s) || slots[s].buffer >= 0) continue;
      size_t bytes = static_cast<size_t>(shape_numel(slots[s].shape)) * dtype_size(slots[s].dtype);
      bytes = (bytes + 255) / 256 * 256;
      int best = -1;
      for (size_t k = 0; k < free_list.size(); ++k) {
        Buffer& b = plan_->buffers[free_list[k]];
        if (b.device != slots[s].device || b.bytes < bytes) continue;
        if (best < 0 || b.bytes < plan_->buffers[free_list[best]].bytes) best = static_cast<int>(k);
      }
      if (best >= 0) {
        slots[s].buffer = free_list[best];
        free_list.erase(free_list.begin() + best);
      } else {
        plan_->buffers.push_back({slots[s].device, bytes, Tensor()});
        slots[s].buffer = static_cast<int>(plan_->buffers.size() - 1);
      }
    }
    auto release = [&](int s) {
      if (s < 0) return;
      int r = root(s);
      if (pooled(r) && slots[r].buffer >= 0 && slots[r].last_use <= static_cast<int>(i) &&
          std::find(free_list.begin(), free_list.end(), slots[r].buffer) == free_list.end())
        free_list.push_back(slots[r].buffer);
    };
    for (int s : step.inputs) release(s);
    for (int s : step.host_copy_slots) release(s);
    for (int s : step.outputs) release(s);  // values nothing reads
  }
}

}  // namespace compiling

std::unique_ptr<Plan> compile_plan(const Graph& graph, const SessionOptions& options,
                                   const std::vector<Shape>& input_shapes,
                                   const std::vector<Tensor>& input_values, PrecisionCache* precision_cache) {
  compiling::Compiler c(graph, options, precision_cache);
  return c.run(input_shapes, input_values);
}

namespace {
// The graph values that reach an input named by `seeds` (OpSchema::host_inputs or
// OpSchema::host_read_inputs) of some node, directly or through the nodes that compute it.
std::vector<bool> values_reaching(const Graph& graph, std::vector<int> OpSchema::*seeds) {
  std::vector<bool> needed(graph.values.size(), false);
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& n = graph.nodes[i];
    for (int h : n.op->*seeds)
      if (h < static_cast<int>(n.inputs.size()) && n.inputs[h] >= 0) needed[n.inputs[h]] = true;
    bool out_needed = false;
    for (int v : n.outputs) out_needed |= v >= 0 && needed[v];
    // Shape reads only the shape of its input, which is known anyway.
    if (out_needed && n.op->name != "Shape")
      for (int v : n.inputs)
        if (v >= 0) needed[v] = true;
  }
  return needed;
}
}  // namespace

std::vector<bool> shape_deciding_values(const Graph& graph) { return values_reaching(graph, &OpSchema::host_inputs); }

std::vector<bool> host_read_values(const Graph& graph) { return values_reaching(graph, &OpSchema::host_read_inputs); }

std::vector<bool> shape_deciding_inputs(const Graph& graph) {
  std::vector<bool> needed = shape_deciding_values(graph);
  std::vector<bool> out;
  for (int v : graph.inputs) out.push_back(needed[v]);
  return out;
}

void annotate_shapes(Graph& graph, const std::vector<Shape>& input_shapes, const std::vector<Tensor>& input_values) {
  SessionOptions keep;
  keep.keep_values = true;
  std::unique_ptr<Plan> plan = compile_plan(graph, keep, input_shapes, input_values);
  auto record = [&](const std::string& name, const Shape& shape, DType dtype) {
    int id = graph.find(name);
    if (id < 0) return;
    Value& v = graph.values[id];
    v.shape = shape;
    v.dtype = dtype;
    v.shape_known = true;
  };
  for (const auto& [name, slot] : plan->kept_slots) record(name, plan->slots[slot].shape, plan->slots[slot].dtype);
  for (const auto& [name, t] : plan->kept_constants) {
    record(name, t.shape(), t.dtype());
    if (int id = graph.find(name); id >= 0 && graph.values[id].producer >= 0) {
      graph.values[id].plan_constant = true;
      if (t.numel() <= 16) graph.values[id].folded = t;
    }
  }
  for (size_t k = 0; k < graph.inputs.size() && k < input_shapes.size(); ++k) {
    Value& v = graph.values[graph.inputs[k]];
    record(v.name, input_shapes[k], v.dtype);
  }
}

}  // namespace porta::detail
