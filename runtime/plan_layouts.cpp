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

// Private layouts between steps (KernelDef::private_layout, e.g. the cpu Conv and pooling
// kernels' oneDNN channels-last). A slot stays in a layout when
//   - its producer writes it there: a kernel step whose layout_use allows output 0, or a
//     layout-agnostic elementwise step (KernelDef::layout_agnostic) whose inputs shaped like its
//     output are all in that one layout;
//   - every reader takes it there: a step of the same device whose layout_use allows that
//     input and whose kernel declares the same layout, or a layout-agnostic step reading it as
//     an input shaped like its output;
//   - it is no graph input or output, no alias and not aliased (views read plain memory).
// Agnostic steps tie their operands together (all in the layout, or none), so the pass removes
// slots from the layout until every constraint holds (each round only removes; it ends).
// Kernel steps learn their sides through the attribute `porta_layout` (LayoutSides). The bytes
// of a value are the same in every layout, so slots and buffers do not change. Not with
// keep_values (kept values are read as plain tensors) nor with PORTA_FUSE=0.
void chain_private_layouts(Plan& plan) {
  if (!fusion_enabled()) return;
  auto& slots = plan.slots;
  auto& steps = plan.steps;
  const size_t n_steps = steps.size();
  auto probe_of = [&](const Step& st) {
    KernelContext probe;
    probe.op = st.ctx.op;
    probe.attrs = st.ctx.attrs;
    probe.device = st.device;
    for (int s : st.inputs) probe.inputs.push_back(s >= 0 ? shape_probe(slots[s].shape, slots[s].dtype) : Tensor());
    for (int s : st.outputs) probe.outputs.push_back(s >= 0 ? shape_probe(slots[s].shape, slots[s].dtype) : Tensor());
    return probe;
  };
  // Per step: the operands it can take in its kernel's layout, or (agnostic steps) the inputs
  // that share output 0's shape.
  std::vector<KernelDef::LayoutUse> use(n_steps);
  std::vector<bool> agnostic(n_steps, false);  // a generic elementwise step (no layout of its own)
  for (size_t i = 0; i < n_steps; ++i) {
    const Step& st = steps[i];
    if (st.kind != StepKind::kernel || !st.kernel || st.outputs.empty() || st.outputs[0] < 0) continue;
    if (!st.kernel->private_layout.empty() && st.kernel->layout_use) use[i] = st.kernel->layout_use(probe_of(st));
    if (use[i].inputs || use[i].output || !st.kernel->layout_agnostic || st.outputs.size() != 1) continue;
    {
      const Shape& y = slots[st.outputs[0]].shape;
      bool ok = true;
      for (size_t k = 0; k < st.inputs.size() && ok; ++k) {
        int s = st.inputs[k];
        if (s < 0) continue;
        if (slots[s].shape == y && k < 64) use[i].inputs |= uint64_t{1} << k;
        else ok = shape_numel(slots[s].shape) == 1;
      }
      agnostic[i] = ok && use[i].inputs != 0;
      use[i].output = use[i].tied = agnostic[i];
      if (!agnostic[i]) use[i] = {};
    }
  }
  auto takes = [&](size_t i, size_t k) { return k < 64 && ((use[i].inputs >> k) & 1); };

  // The layout each slot may be kept in (nullptr: plain).
  std::vector<const std::string*> layout(slots.size(), nullptr);
  std::vector<int> producer(slots.size(), -1);
  for (size_t i = 0; i < n_steps; ++i)
    if (use[i].output) {
      producer[steps[i].outputs[0]] = static_cast<int>(i);
      if (!use[i].tied) layout[steps[i].outputs[0]] = &steps[i].kernel->private_layout;
    }
  // A slot once dropped stays plain (`dead`), so the rounds below only remove and end.
  std::vector<bool> dead(slots.size(), false);
  bool changed = false;
  auto drop = [&](int s) {
    if (s >= 0 && !dead[s]) {
      dead[s] = true;
      layout[s] = nullptr;
      changed = true;
    }
  };
  for (int s : plan.output_slots) drop(s);
  for (size_t s = 0; s < slots.size(); ++s)
    if (slots[s].graph_input >= 0 || slots[s].alias_of >= 0) {
      drop(static_cast<int>(s));
      drop(slots[s].alias_of);
    }
  auto same = [](const std::string* a, const std::string* b) { return a && b && *a == *b; };
  auto from_device = [&](int s, const Device& d) { return producer[s] >= 0 && steps[producer[s]].device == d; };
  do {
    changed = false;
    for (size_t i = 0; i < n_steps; ++i) {
      const Step& st = steps[i];
      if (use[i].tied) {
        // All layout operands in one layout (the kernel's own, if it has one), or none; the
        // output follows the inputs.
        const std::string* l = agnostic[i] ? nullptr : &st.kernel->private_layout;
        bool all = !dead[st.outputs[0]];
        for (size_t k = 0; k < st.inputs.size(); ++k) {
          if (!takes(i, k)) continue;
          int s = st.inputs[k];
          if (!l) l = layout[s];
          all &= same(layout[s], l) && from_device(s, st.device);
        }
        int y = st.outputs[0];
        if (all) {
          if (layout[y] != l) {
            layout[y] = l;
            changed = true;
          }
        } else {
          for (size_t k = 0; k < st.inputs.size(); ++k)
            if (takes(i, k)) drop(st.inputs[k]);
          drop(y);
        }
        for (size_t k = 0; k < st.inputs.size(); ++k)  // the step reads its other inputs plain
          if (!takes(i, k)) drop(st.inputs[k]);
        continue;
      }
      // Any other step: an input it cannot take in the slot's layout makes the slot plain.
      for (size_t k = 0; k < st.inputs.size(); ++k) {
        int s = st.inputs[k];
        if (s < 0 || !layout[s]) continue;
        if (!(takes(i, k) && st.kernel && same(&st.kernel->private_layout, layout[s]) && from_device(s, st.device)))
          drop(s);
      }
    }
  } while (changed);

  static const char* const kNotes[] = {"", "input", "output", "input and output"};
  const std::map<const Attributes*, Attributes*> writable = writable_attributes(plan);
  for (size_t i = 0; i < n_steps; ++i) {
    const Step& st = steps[i];
    if (agnostic[i] || (!use[i].output && use[i].inputs == 0)) continue;
    uint64_t in_mask = 0;
    for (size_t k = 0; k < st.inputs.size() && k < 64; ++k)
      if (st.inputs[k] >= 0 && layout[st.inputs[k]]) in_mask |= uint64_t{1} << k;
    bool out = layout[st.outputs[0]] != nullptr;
    if (!in_mask && !out) continue;
    writable.at(st.ctx.attrs)->set("porta_layout", LayoutSides::format(in_mask, st.inputs.size(), out));
    if (st.plan_node >= 0 && st.name == plan.nodes[st.plan_node].node)  // not a composite's part
      plan.nodes[st.plan_node].reason +=
          str("; ", kNotes[(in_mask ? 1 : 0) | (out ? 2 : 0)], " kept in the kernel's ", st.kernel->private_layout, " layout");
  }
  for (size_t i = 0; i < n_steps; ++i) {
    const Step& st = steps[i];
    if (!agnostic[i] || !layout[st.outputs[0]]) continue;
    if (st.plan_node >= 0 && st.name == plan.nodes[st.plan_node].node)
      plan.nodes[st.plan_node].reason += str("; elementwise on values in the ", *layout[st.outputs[0]], " layout");
  }
}


}  // namespace porta::detail
