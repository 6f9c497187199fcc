// Values that live inside another value's memory (Compiler::concat_in_place and
// Compiler::slice_in_place): on devices that allow tensors inside another's memory
// (Capabilities::view_alignment), a Concat's inputs written straight into its output, and
// Slices that read a contiguous block of their input in place. Each such slot is a fixed block
// of its root's buffer (Slot::alias_offset), bound when the plan's buffers are.
#include <algorithm>
#include <vector>

#include "ops/shape_util.hpp"
#include "porta/backend.hpp"
#include "porta/error.hpp"
#include "runtime/session_compiler.hpp"

namespace porta::detail::compiling {
namespace {

// Per slot: whether it is a graph output or a slot one views (the caller gets that memory each run).
std::vector<bool> graph_output_memory(const Plan& plan) {
  std::vector<bool> out(plan.slots.size(), false);
  for (int s : plan.output_slots)
    for (int r = s; r >= 0; r = plan.slots[r].alias_of) out.at(r) = true;
  return out;
}

// What the Concat passes know of a plan's slots: how many steps write each, the last one that
// does, and whether it is the plan's own memory (no view or block of another, constant, graph
// input or graph output).
struct SlotWrites {
  std::vector<int> writers, writer;
  std::vector<bool> own;
  explicit SlotWrites(const Plan& plan)
      : writers(plan.slots.size(), 0), writer(plan.slots.size(), -1), own(plan.slots.size(), false) {
    for (size_t k = 0; k < plan.steps.size(); ++k)
      for (int s : plan.steps[k].outputs)
        if (s >= 0) ++writers[s], writer[s] = static_cast<int>(k);
    const std::vector<bool> graph_output = graph_output_memory(plan);
    for (size_t s = 0; s < plan.slots.size(); ++s) {
      const Slot& sl = plan.slots[s];
      own[s] = sl.alias_of < 0 && !sl.constant.defined() && sl.graph_input < 0 && !graph_output[s];
    }
  }
  // Slot s is the plan's own memory, written by exactly one step.
  bool plain(int s) const { return s >= 0 && own[s] && writers[s] == 1; }
};

// Whether step `c` is a Concat of `device` with one output, joining distinct inputs along an
// axis with only 1s before it (so each input is one contiguous block of the output).
bool blockwise_concat(const Step& c, const std::vector<Slot>& slots, Device device) {
  if (c.kind != StepKind::kernel || c.op != "Concat" || c.ctx.op->domain != "" || c.device != device ||
      c.outputs.size() != 1 || c.outputs[0] < 0 || c.inputs.empty())
    return false;
  const Shape& shape = slots[c.outputs[0]].shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t axis = c.ctx.attrs->get_int("axis", 0);
  if (axis < 0) axis += rank;
  bool ok = axis >= 0 && axis < rank;
  for (int64_t i = 0; ok && i < axis; ++i) ok = shape[static_cast<size_t>(i)] == 1;
  for (int s : c.inputs) ok = ok && std::count(c.inputs.begin(), c.inputs.end(), s) == 1;
  return ok;
}

// Where each input of Concat `c` starts in its output (elements), when every input is plain,
// written by a kernel step of the Concat's device before it, of the output's dtype, and every
// block starts on `align` bytes and spans a multiple of 16; else empty.
std::vector<int64_t> aligned_blocks(const Step& c, int k, const std::vector<Slot>& slots, const std::vector<Step>& steps,
                                    const SlotWrites& w, size_t align) {
  const int out = c.outputs[0];
  const size_t elem = dtype_size(slots[out].dtype);
  int64_t offset = 0;
  std::vector<int64_t> offsets;
  for (int s : c.inputs) {
    if (!w.plain(s) || w.writer[s] < 0 || w.writer[s] >= k || steps[w.writer[s]].kind != StepKind::kernel ||
        steps[w.writer[s]].device != c.device || slots[s].dtype != slots[out].dtype)
      return {};
    const int64_t n = shape_numel(slots[s].shape);
    if ((static_cast<size_t>(offset) * elem) % align != 0 || (static_cast<size_t>(n) * elem) % 16 != 0) return {};
    offsets.push_back(offset);
    offset += n;
  }
  if (offset != shape_numel(slots[out].shape)) return {};
  return offsets;
}

}  // namespace

// Bytes a tensor inside another's memory starts on for the session's device: 0 (none) on the
// cpu and on devices without views (Capabilities::view_alignment).
size_t Compiler::view_alignment() const {
  if (options_.device.type == DeviceType::cpu) return 0;
  return backend_for(options_.device).capabilities(options_.device.index).view_alignment;
}

// Concat in place, on devices that allow tensors inside another's memory
// (Capabilities::view_alignment): where every axis before the Concat's is 1 (batch-1 channel
// concatenations: inception's branches, squeezenet's fire modules, shufflenet's halves), each
// input is one contiguous block of the output. When every input is written by one kernel step
// of that device (not a constant, graph input or output, view, or another Concat's block, and
// no input twice) and every block starts and ends on the alignment, the producers write
// straight into the output's memory and the Concat step goes. The output's buffer is then
// taken at its first producer's step (plan_memory).
void Compiler::concat_in_place() {
  const size_t align = view_alignment();
  if (align == 0) return;
  std::vector<Slot>& slots = plan_->slots;
  std::vector<Step>& steps = plan_->steps;
  const SlotWrites w(*plan_);
  std::vector<bool> dropped(steps.size(), false);
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& c = steps[k];
    if (!blockwise_concat(c, slots, options_.device) || !w.plain(c.outputs[0])) continue;
    const std::vector<int64_t> offsets = aligned_blocks(c, static_cast<int>(k), slots, steps, w, align);
    if (offsets.empty()) continue;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      slots[c.inputs[i]].alias_of = c.outputs[0];
      slots[c.inputs[i]].alias_offset = offsets[i];
    }
    dropped[k] = true;
    if (c.plan_node >= 0)
      plan_->nodes[c.plan_node].reason += "; not run: its inputs' producers write them into its output (no copy)";
  }
  erase_steps(steps, dropped);
}

// Concatenations that grow one input at a time (DenseNet's blocks: layer L concatenates the
// block's input and the L - 1 maps before it, each layer's Concat the previous one's inputs
// and one more), on devices that allow tensors inside another's memory: where the largest
// Concat M of such a family joins along an axis with only 1s before it, every input is
// written by one kernel step of the device straight into M's output, and each smaller Concat's
// output is the leading block of M's output (its inputs are M's first ones, in order). Every
// Concat step of the family goes; each piece is written once, where each layer's Concat copied
// all of them. Runs before concat_in_place, which takes the Concats of no such family.
void Compiler::concat_prefixes_in_place() {
  const size_t align = view_alignment();
  if (align == 0) return;
  std::vector<Slot>& slots = plan_->slots;
  std::vector<Step>& steps = plan_->steps;
  const SlotWrites w(*plan_);
  std::vector<int> concats;
  for (size_t k = 0; k < steps.size(); ++k)
    if (blockwise_concat(steps[k], slots, options_.device) && w.plain(steps[k].outputs[0]))
      concats.push_back(static_cast<int>(k));
  std::vector<bool> dropped(steps.size(), false);
  for (auto m = concats.rbegin(); m != concats.rend(); ++m) {
    if (dropped[*m]) continue;
    const Step& big = steps[*m];
    const int out = big.outputs[0];
    // The family: the Concats (before M) whose inputs are M's first ones.
    std::vector<int> family;
    for (int k : concats) {
      const Step& c = steps[k];
      if (k < *m && !dropped[k] && c.inputs.size() < big.inputs.size() &&
          slots[c.outputs[0]].dtype == slots[out].dtype &&
          c.ctx.attrs->get_int("axis", 0) == big.ctx.attrs->get_int("axis", 0) &&
          std::equal(c.inputs.begin(), c.inputs.end(), big.inputs.begin()))
        family.push_back(k);
    }
    if (family.empty()) continue;
    const std::vector<int64_t> offsets = aligned_blocks(big, *m, slots, steps, w, align);
    if (offsets.empty()) continue;
    for (size_t i = 0; i < big.inputs.size(); ++i) {
      slots[big.inputs[i]].alias_of = out;
      slots[big.inputs[i]].alias_offset = offsets[i];
    }
    dropped[*m] = true;
    if (big.plan_node >= 0)
      plan_->nodes[big.plan_node].reason += "; not run: its inputs' producers write them into its output (no copy)";
    for (int k : family) {
      slots[steps[k].outputs[0]].alias_of = out;
      slots[steps[k].outputs[0]].alias_offset = 0;
      dropped[k] = true;
      if (steps[k].plan_node >= 0)
        plan_->nodes[steps[k].plan_node].reason +=
            "; not run: its output is the leading block of a larger Concat's of the same inputs (no copy)";
    }
  }
  erase_steps(steps, dropped);
}

// Slice in place, on devices that allow tensors inside another's memory (as concat_in_place):
// a Slice whose starts, ends, axes and steps are constants and whose output is one contiguous
// block of its input (every axis before the first narrowed one of size 1, every axis after it
// whole: a channel range of a batch-1 tensor, shufflenet's halves) becomes that
// block: its readers read the input's memory and the Slice step goes. The input's memory must
// be the plan's own (its root, through views and Concat blocks, is no constant, graph input or
// graph output), the output no graph output and not itself a block of something else, and the
// block must start on the alignment. Runs after concat_in_place, which may already have the
// Slice write its output into a Concat's.
void Compiler::slice_in_place() {
  const size_t align = view_alignment();
  if (align == 0) return;
  std::vector<Slot>& slots = plan_->slots;
  std::vector<Step>& steps = plan_->steps;
  std::vector<int> writers(slots.size(), 0);
  for (const Step& step : steps)
    for (int s : step.outputs)
      if (s >= 0) ++writers[s];
  const std::vector<bool> graph_output = graph_output_memory(*plan_);
  std::vector<bool> dropped(steps.size(), false);
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& c = steps[k];
    if (c.kind != StepKind::kernel || c.op != "Slice" || c.ctx.op->domain != "" || c.device != options_.device ||
        c.outputs.size() != 1 || c.outputs[0] < 0 || c.inputs.size() < 3 || c.inputs[0] < 0)
      continue;
    const int in = c.inputs[0], out = c.outputs[0];
    const Slot& o = slots[out];
    if (o.alias_of >= 0 || o.constant.defined() || o.graph_input >= 0 || graph_output[out] || writers[out] != 1 ||
        o.dtype != slots[in].dtype || slots[in].device != c.device)
      continue;
    // starts, ends, axes?, steps?: constants.
    std::vector<std::vector<int64_t>> args(4);
    bool ok = true;
    for (size_t i = 1; ok && i < 5; ++i) {
      if (i >= c.inputs.size() || c.inputs[i] < 0) continue;
      ok = slots[c.inputs[i]].constant.defined();
      if (ok) args[i - 1] = opdef::tensor_ints(slots[c.inputs[i]].constant);
    }
    if (!ok) continue;
    const Shape& shape = slots[in].shape;
    opdef::SliceGeometry g;
    try {
      g = opdef::slice_geometry(shape, args[0], args[1], args[2], args[3], "Slice");
    } catch (const Error&) {
      continue;  // the kernel reports it
    }
    // One contiguous block: from the first axis the slice narrows, every later axis whole.
    int64_t offset = 0, stride = 1;
    std::vector<int64_t> strides(shape.size());
    for (size_t i = shape.size(); i-- > 0;) strides[i] = stride, stride *= shape[i];
    size_t first = shape.size();
    for (size_t i = 0; i < shape.size(); ++i) {
      offset += g.start[i] * strides[i];
      if (g.count[i] != shape[i] && first == shape.size()) first = i;
      if (g.count[i] > 1 && g.step[i] != 1) ok = false;
    }
    for (size_t i = 0; ok && i < first; ++i) ok = shape[i] == 1;  // else a block per outer index
    for (size_t i = first + 1; ok && i < shape.size(); ++i) ok = g.count[i] == shape[i];
    if (!ok || shape_numel(o.shape) == 0) continue;
    // The input's root (through view steps, at offset 0, and Concat blocks) holds plan memory.
    int root = in;
    while (slots[root].alias_of >= 0) {
      if (slots[root].alias_offset > 0) offset += slots[root].alias_offset;
      root = slots[root].alias_of;
    }
    const Slot& r = slots[root];
    if (r.constant.defined() || r.graph_input >= 0 || graph_output[root] ||
        (static_cast<size_t>(offset) * dtype_size(o.dtype)) % align != 0)
      continue;
    slots[out].alias_of = root;
    slots[out].alias_offset = offset;
    dropped[k] = true;
    if (c.plan_node >= 0) plan_->nodes[c.plan_node].reason += "; not run: its readers read its input's memory (no copy)";
  }
  erase_steps(steps, dropped);
}

}  // namespace porta::detail::compiling
