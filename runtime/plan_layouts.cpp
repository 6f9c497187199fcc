// porta runtime — plan passes over what kernels declare: private layouts between steps
// (contracts in session_plan.hpp).
#include <map>

#include "porta/util.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/session_plan.hpp"

namespace porta::detail {

// A tensor with the right shape and dtype but a single element of storage (zero strides):
// lets `supports` functions inspect a call without real data.
Tensor shape_probe(const Shape& shape, DType dtype) {
  Tensor one = Tensor::zeros({1}, dtype);
  return one.as_strided(shape, std::vector<int64_t>(shape.size(), 0), 0);
}

// A value passed from a step whose kernel declares a private layout (KernelDef::private_layout,
// e.g. the cpu Conv and MaxPool kernels' oneDNN channel-blocked one) straight to steps whose
// kernels declare the same layout on the same device stays in that layout instead of each step
// converting from and to the plain one: each such step gets the attribute porta_layout
// ("blocked_src", "blocked_dst" or "blocked"). The bytes are the same either way, so slots and
// buffers do not change. A value qualifies when such a step produces it as output 0, every step
// that reads it is such a step reading it as input 0 (with `layout_ok` accepting each call), and
// it is no graph input or output. Not with keep_values (kept values are read as plain tensors)
// nor with PORTA_FUSE=0.
void chain_private_layouts(Plan& plan) {
  if (!fusion_enabled()) return;
  auto layout_of = [&](const Step& st) -> const std::string* {
    if (st.kind != StepKind::kernel || !st.kernel || st.kernel->private_layout.empty() || !st.kernel->layout_ok)
      return nullptr;
    KernelContext probe;
    probe.op = st.ctx.op;
    probe.attrs = st.ctx.attrs;
    probe.device = st.device;
    for (int s : st.inputs) probe.inputs.push_back(s >= 0 ? shape_probe(plan.slots[s].shape, plan.slots[s].dtype) : Tensor());
    for (int s : st.outputs) probe.outputs.push_back(s >= 0 ? shape_probe(plan.slots[s].shape, plan.slots[s].dtype) : Tensor());
    return st.kernel->layout_ok(probe) ? &st.kernel->private_layout : nullptr;
  };
  auto& slots = plan.slots;
  std::vector<const std::string*> layouts(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) layouts[i] = layout_of(plan.steps[i]);
  std::vector<int> producer(slots.size(), -1);
  std::vector<bool> refused(slots.size(), false);  // read by a step that needs it plain
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& st = plan.steps[i];
    bool aware = layouts[i] != nullptr;
    for (size_t k = 0; k < st.inputs.size(); ++k)
      if (st.inputs[k] >= 0 && (!aware || k != 0)) refused[st.inputs[k]] = true;
    if (aware && !st.outputs.empty() && st.outputs[0] >= 0) producer[st.outputs[0]] = static_cast<int>(i);
  }
  for (int s : plan.output_slots) refused[s] = true;
  for (const Slot& sl : slots)
    if (sl.alias_of >= 0) refused[sl.alias_of] = true;
  std::vector<uint8_t> sides(plan.steps.size(), 0);  // bit 0: src in the layout, bit 1: dst
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& st = plan.steps[i];
    int s = st.inputs.empty() ? -1 : st.inputs[0];
    if (s < 0 || producer[s] < 0 || refused[s] || slots[s].graph_input >= 0) continue;
    const Step& from = plan.steps[producer[s]];
    if (*layouts[producer[s]] != *layouts[i] || from.device != st.device) {
      refused[s] = true;
      continue;
    }
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& st = plan.steps[i];
    int s = st.inputs.empty() ? -1 : st.inputs[0];
    if (s < 0 || producer[s] < 0 || refused[s] || slots[s].graph_input >= 0) continue;
    sides[i] |= 1;  // only steps in the same layout read an unrefused slot
    sides[producer[s]] |= 2;
  }
  static const char* const kLayouts[] = {"", "blocked_src", "blocked_dst", "blocked"};
  std::map<const Attributes*, Attributes*> writable;  // steps see their attributes as const
  for (Attributes& a : plan.attrs) writable[&a] = &a;
  static const char* const kNotes[] = {"", "input", "output", "input and output"};
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (!sides[i]) continue;
    const Step& st = plan.steps[i];
    writable.at(st.ctx.attrs)->set("porta_layout", std::string(kLayouts[sides[i]]));
    if (st.plan_node >= 0 && st.name == plan.nodes[st.plan_node].node)  // not a composite's part
      plan.nodes[st.plan_node].reason += str("; ", kNotes[sides[i]], " kept in the kernel's ", st.kernel->private_layout, " layout");
  }
}

// Records where each node output lives; plan_memory keeps those slots out of the pool.

}  // namespace porta::detail
