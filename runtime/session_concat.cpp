// porta runtime — a channel Concat read by one BatchNormalization alone becomes that
// BatchNormalization reading the Concat's inputs (contract in session_plan.hpp).
#include <algorithm>
#include <map>

#include "porta/util.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/registry.hpp"
#include "runtime/session_plan.hpp"

namespace porta::detail {
namespace {

// Which operands of a kernel step are in its kernel's private layout (plan_layouts.cpp).
LayoutSides sides(const Step& s) {
  return s.ctx.attrs->has("porta_layout") ? LayoutSides::parse(s.ctx.attrs->get_string("porta_layout")) : LayoutSides{};
}

// Whether a Concat step over `shape` joins along axis 1 (channels) of a rank 3-5 tensor.
bool channel_axis(const Step& c, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = c.ctx.attrs->get_int("axis", 0);
  if (axis < 0) axis += rank;
  return rank >= 3 && rank <= 5 && axis == 1;
}

}  // namespace

std::map<const Attributes*, Attributes*> writable_attributes(Plan& plan) {
  std::map<const Attributes*, Attributes*> writable;
  for (Attributes& a : plan.attrs) writable[&a] = &a;
  return writable;
}

void erase_steps(std::vector<Step>& steps, const std::vector<bool>& drop) {
  if (std::find(drop.begin(), drop.end(), true) == drop.end()) return;
  std::vector<Step> kept;
  kept.reserve(steps.size());
  for (size_t k = 0; k < steps.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(steps[k]));
  steps = std::move(kept);
}

void concat_into_batch_norm(Plan& plan) {
  if (!fusion_enabled()) return;
  std::vector<Slot>& slots = plan.slots;
  std::vector<Step>& steps = plan.steps;
  std::vector<int> readers(slots.size(), 0), reader(slots.size(), -1), writers(slots.size(), 0);
  for (size_t k = 0; k < steps.size(); ++k) {
    for (int s : steps[k].inputs)
      if (s >= 0) ++readers[s], reader[s] = static_cast<int>(k);
    for (int s : steps[k].outputs)
      if (s >= 0) ++writers[s];
  }
  std::vector<bool> outside(slots.size(), false);  // graph outputs, and slots viewed or viewing
  for (int s : plan.output_slots) outside.at(s) = true;
  for (const auto& kept : plan.kept_slots) outside.at(kept.second) = true;
  for (size_t s = 0; s < slots.size(); ++s)
    if (slots[s].alias_of >= 0) outside[s] = outside.at(slots[s].alias_of) = true;
  const std::map<const Attributes*, Attributes*> writable = writable_attributes(plan);
  std::vector<bool> dropped(steps.size(), false);
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& c = steps[k];
    if (c.kind != StepKind::kernel || c.op != "Concat" || c.ctx.op->domain != "" || c.outputs.size() != 1 ||
        c.outputs[0] < 0 || c.inputs.empty() || c.inputs.size() + 4 > 64)
      continue;
    const int y = c.outputs[0];
    if (outside[y] || writers[y] != 1 || readers[y] != 1 || slots[y].dtype != DType::f32 ||
        !channel_axis(c, slots[y].shape))
      continue;
    Step& b = steps[static_cast<size_t>(reader[y])];
    if (b.kind != StepKind::kernel || b.op != "BatchNormalization" || b.ctx.op->domain != "" ||
        b.device != c.device || !b.kernel || !kernel_fuses(*b.kernel, "porta_concat") || b.inputs.size() != 5 ||
        b.inputs[0] != y || b.outputs.size() != 1 || b.ctx.attrs->has("porta_concat"))
      continue;
    bool ok = true;
    for (size_t i = 1; i < 5; ++i) ok = ok && b.inputs[i] != y && (b.constant_inputs >> i & 1);
    for (int s : c.inputs) ok = ok && s >= 0 && slots[s].dtype == DType::f32;
    // Both in the private layout or both plain: the parts are then stored as the Concat read them.
    const LayoutSides cl = sides(c), bl = sides(b);
    ok = ok && cl.output == bl.input(0) && bl.input(0) == bl.output;
    for (size_t i = 0; ok && i < c.inputs.size(); ++i) ok = cl.input(i) == cl.output;
    if (!ok) continue;
    std::vector<int> inputs = {c.inputs[0], b.inputs[1], b.inputs[2], b.inputs[3], b.inputs[4]};
    inputs.insert(inputs.end(), c.inputs.begin() + 1, c.inputs.end());
    Attributes* attrs = writable.at(b.ctx.attrs);
    attrs->set("porta_concat", static_cast<int64_t>(c.inputs.size()));
    if (bl.output) {
      uint64_t mask = 1;
      for (size_t i = 5; i < inputs.size(); ++i) mask |= uint64_t{1} << i;
      attrs->set("porta_layout", LayoutSides::format(mask, inputs.size(), true));
    }
    b.inputs = std::move(inputs);
    b.constant_inputs = 0;
    for (size_t i = 0; i < b.inputs.size(); ++i)
      if (slots[b.inputs[i]].constant.defined()) b.constant_inputs |= uint64_t{1} << i;
    b.ctx.inputs.resize(b.inputs.size());
    dropped[k] = true;
    if (c.plan_node >= 0)
      plan.nodes[c.plan_node].reason += "; not run: its BatchNormalization reads its inputs (no copy)";
    if (b.plan_node >= 0)
      plan.nodes[b.plan_node].reason += str("; reads the ", c.inputs.size(), " inputs of the Concat before it");
  }
  erase_steps(steps, dropped);
}

}  // namespace porta::detail
