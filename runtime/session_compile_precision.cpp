// porta runtime — the precision policy while a plan compiles (docs/ARCHITECTURE.md, "Compute
// precision"; the policy's table: runtime/precision.cpp): each node's Lowering, the twins of
// values in other formats (weights converted once, other values by one shared Cast), and the
// marks a lowered node carries (`porta_compute`, an f32 destination).
#include <string>
#include <utility>

#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/placement.hpp"
#include "runtime/session_compiler.hpp"

namespace porta::detail::compiling {


// ONNX TensorProto codes (Cast's `to`) of the formats the planner casts between.
int64_t onnx_dtype_code(DType t) {
  switch (t) {
    case DType::f32: return 1;
    case DType::f16: return 10;
    case DType::bf16: return 16;
    default: throw InvalidArgument(str("[session] internal: no precision cast to ", dtype_name(t)));
  }
}

// The value `v` in dtype `to`: itself, or its twin, made once: a constant converted on the host
// (a weight once per session, through the session's PrecisionCache), any other value by one
// Cast step that every reader shares. A twin links back, so casting it back costs nothing.
int Compiler::twin(int v, DType to, int plan_node) {
  if (values_.at(v).dtype == to) return v;
  if (auto it = values_[v].twins.find(to); it != values_[v].twins.end()) return it->second;
  const int t = new_value();
  {
    const CValue& src = values_[v];
    CValue& dst = values_[t];
    dst.shape = src.shape;
    dst.dtype = to;
    dst.present = src.present;
    dst.from_input = src.from_input;
    if (src.constant.defined()) dst.constant = src.weight && cache_ ? cache_->converted(src.constant, to) : src.constant.cast(to);
  }
  if (!values_[t].constant.defined()) {
    const OpSchema* cast = find_op("Cast");
    Attributes attrs = complete_attributes(*cast, Attributes{{"to", onnx_dtype_code(to)}}, "");
    process_node(*cast, attrs, {v}, {t}, str("cast ", value_label(v), " to ", dtype_name(to)), plan_node, 1);
  }
  values_[t].lowered = to == low_;
  values_[t].twins[values_[v].dtype] = v;
  values_[v].twins[to] = t;
  return t;
}

// The precision policy for one node (docs/ARCHITECTURE.md, "Compute precision"): replaces in
// `ins` the inputs it reads in another dtype by their twins, says why in `note`, and returns
// what the node does: low (it computes in the low format; its float outputs are then lowered),
// inside (its kernel converts; inputs and outputs stay f32) or f32.
Compiler::Lowering Compiler::apply_precision(const OpSchema& op, const Attributes& attrs, std::vector<int>& ins,
                                             int plan_node, std::string& note) {
  const std::string low(dtype_name(low_));
  bool any_float = false, all_constant = true, all_lowered = true, any_lowered = false, model_f32 = true;
  for (int v : ins) {
    if (v < 0 || !values_.at(v).present) continue;
    const CValue& cv = values_[v];
    all_constant &= cv.constant.defined();
    if (!is_floating(cv.dtype)) continue;
    any_float = true;
    all_lowered &= cv.lowered;
    any_lowered |= cv.lowered;
    model_f32 &= cv.lowered || cv.dtype == DType::f32;
  }
  std::string casts;
  auto use = [&](size_t i, DType to) {
    const int v = ins[i];
    const bool constant = values_[v].constant.defined();
    ins[i] = twin(v, to, plan_node);
    casts += str(casts.empty() ? "" : ", ", value_label(v), constant ? " converted to " : " cast to ", dtype_name(to));
  };
  auto lowered_back_to_f32 = [&] {
    for (size_t i = 0; i < ins.size(); ++i)
      if (ins[i] >= 0 && values_[ins[i]].present && values_[ins[i]].lowered) use(i, DType::f32);
  };
  auto say = [&](const std::string& why) { note = casts.empty() ? why : str(why, "; ", casts); };
  // Constant inputs fold (in the model's dtypes); ops without float inputs have no format.
  if (!any_float || all_constant) return Lowering::f32;
  const PrecisionClass cls = precision_class(op);
  if (cls == PrecisionClass::lower || cls == PrecisionClass::lower_inside) {
    if (!model_f32) {
      lowered_back_to_f32();
      say("as exported: its float inputs are not all f32 in the model");
      return Lowering::f32;
    }
    if (!low_in_f32_.empty()) {
      lowered_back_to_f32();
      say(str("f32: ", low_in_f32_, " (policy: ", precision_class_name(cls), ")"));
      return Lowering::f32;
    }
    // `auto` asks for speed: a product too small to gain stays f32 (kAutoMinMacs).
    if (options_.precision == Precision::automatic) {
      std::vector<Shape> shapes;
      for (int v : ins) shapes.push_back(v >= 0 && values_.at(v).present ? values_[v].shape : Shape{});
      if (int64_t macs = product_macs(op, shapes, attrs); macs >= 0 && macs < kAutoMinMacs) {
        lowered_back_to_f32();
        say(str("f32: ", macs, " multiply-adds are too few to gain from ", low, " (auto lowers products of at least ",
                kAutoMinMacs, ")"));
        return Lowering::f32;
      }
    }
    // Kernels that convert f32 activations themselves (KernelDef::computes_in) get them as
    // they are: no Cast on either side, the weights converted by the kernel once per session.
    if (computes_inside(op)) {
      lowered_back_to_f32();
      say(str(low, " inside its kernel with f32 accumulation, f32 in and out (policy: ", precision_class_name(cls), ")",
              low_slow_));
      return Lowering::inside;
    }
    if (cls == PrecisionClass::lower_inside) {
      lowered_back_to_f32();
      say(str("f32: no kernel on ", options_.device.str(), " computes ", op.name, "'s products in ", low,
              " while keeping its state in f32 (policy: lower inside)"));
      return Lowering::f32;
    }
    // The low kernel is resolved by the ordinary dispatch (native, composite, cpu fallback);
    // only where none of those exists does the node stay in f32.
    const Resolution& r = resolve(op, options_.device, low_);
    if (r.path == Path::unsupported) {
      lowered_back_to_f32();
      say(str("f32: no kernel computes ", op.name, " in ", low, " on ", options_.device.str(), " or the cpu"));
      return Lowering::f32;
    }
    // A fused bias (MatMul's porta_bias) stays f32 where the kernels add it to f32 accumulators
    // they can also write out (KernelDef::f32_output: the cpu's); others take it in the low format.
    const bool f32_bias = every_kernel_declares(op, low_, options_.device, [](const KernelDef& k) { return k.f32_output; });
    for (size_t i = 0; i < ins.size(); ++i)
      if (ins[i] >= 0 && values_[ins[i]].present && values_[ins[i]].dtype == DType::f32 &&
          !(f32_bias && i < op.inputs.size() && op.inputs[i].rfind("porta_bias", 0) == 0))
        use(i, low_);
    say(str(low, " with f32 accumulation (policy: lower)", low_slow_));
    return Lowering::low;
  }
  if (cls == PrecisionClass::follow && all_lowered) {
    const bool shape_only = op.name == "Shape" && op.domain.empty();
    if (shape_only || op.alias_input0 || resolve(op, options_.device, low_).path == Path::native) {
      say(str(low, ": its inputs are ", low, " (policy: follow)"));
      return Lowering::low;
    }
    lowered_back_to_f32();
    say(str("f32: no ", options_.device.str(), " kernel for ", op.name, " in ", low, " (policy: follow)"));
    return Lowering::f32;
  }
  lowered_back_to_f32();
  if (cls == PrecisionClass::follow)
    say(any_lowered ? str("f32: not all its float inputs are ", low, " (policy: follow)") : "f32 (policy: follow)");
  else
    say(precision_listed(op) ? "f32 (policy: keep f32)" : "f32 (not in the precision table: keep f32)");
  return Lowering::f32;
}

// Whether a lowered graph node should write its outputs in f32 rather than in the low format:
// when no node that would read them low (lower or follow) reads them, the f32 readers and
// graph outputs would otherwise need a Cast after it. Only where every kernel that may run the
// node takes such a call (KernelDef::f32_output).
bool Compiler::wants_f32_destination(const OpSchema& op, const std::vector<int>& outs) const {
  for (int v : outs)
    if (v >= 0 && (static_cast<size_t>(v) >= read_low_.size() || read_low_[v])) return false;
  return every_kernel_declares(op, low_, options_.device, [](const KernelDef& k) { return k.f32_output; });
}

// Whether every kernel that may run `op` for f32 converts to the session's low format itself
// (KernelDef::computes_in).
bool Compiler::computes_inside(const OpSchema& op) const {
  return every_kernel_declares(op, DType::f32, options_.device,
                               [&](const KernelDef& k) { return dtype_in(k.computes_in, low_); });
}

void Compiler::process(const OpSchema& op, const Attributes& attrs, const std::vector<int>& ins,
                       const std::vector<int>& outs, const std::string& name, int plan_node, int depth) {
  std::vector<int> in = ins;
  std::string note;
  const Lowering lowering = low_ == DType::f32 ? Lowering::f32 : apply_precision(op, attrs, in, plan_node, note);
  const bool low = lowering == Lowering::low;
  if (lowering == Lowering::inside) {  // the kernel is told by `porta_compute`; its inputs and outputs stay f32
    Attributes marked = attrs;
    marked.set("porta_compute", onnx_dtype_code(low_));
    process_node(op, marked, in, outs, name, plan_node, depth);
    if (depth == 0 && plan_node >= 0) {
      plan_->nodes[plan_node].precision = low_;
      plan_->nodes[plan_node].precision_note = std::move(note);
    }
    return;
  }
  if (low && depth == 0 && precision_class(op) == PrecisionClass::lower && wants_f32_destination(op, outs)) {
    f32_destination_ = true;
    note = str(dtype_name(low_), " with f32 accumulation, written as f32 for its readers", note.substr(note.find(" (policy")));
  }
  process_node(op, attrs, in, outs, name, plan_node, depth);
  if (low)
    for (int v : outs)
      if (v >= 0 && values_[v].present && values_[v].dtype == low_) values_[v].lowered = true;
  if (depth == 0 && plan_node >= 0) {
    NodePlan& np = plan_->nodes[plan_node];
    const int d = op.dispatch_input;
    if (d >= 0 && d < static_cast<int>(in.size()) && in[d] >= 0 && values_[in[d]].present) np.precision = values_[in[d]].dtype;
    else if (!outs.empty() && outs[0] >= 0) np.precision = values_[outs[0]].dtype;
    np.precision_note = std::move(note);
  }
}

}  // namespace porta::detail::compiling
