// Chains of data-movement steps as one strided copy (Compiler::merge_movement_chains).
//
// PyTorch exports attention's head split as Slice -> Reshape -> Transpose (and the merge back
// as Transpose -> Reshape): two copies of every q, k and v per layer, each a whole pass over
// memory on the cpu and a whole dispatch on a device. Slice, Transpose and the reshape-like
// views are each a strided view of their input, and a view of a view is again one (where a
// reshape keeps it one: merged axes must be laid out one after another), so a chain is one
// view of its first input: the last copy of the chain reads that view straight from the first
// input (ai.porta::StridedCopy) and the copies before it, which nothing else reads then, are
// dropped (drop_unread_steps). A Split's outputs are blocks of its input, so each starts such a
// chain too (a packed q/k/v projection split in three, each then split into heads).
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "ops/custom_common.hpp"
#include "ops/shape_util.hpp"
#include "ops/view_util.hpp"
#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/session_compiler.hpp"

namespace porta::detail::compiling {
namespace {

// A chain's result as a view of its first input: logical axis i is the row-major composition
// of the atoms in axes[i], each atom one size and one stride (elements). One atom per axis is
// a plain strided view; more arise where a reshape merges axes that are not laid out one
// after another (attention's [S, B, H*Dh] -> [S, B*H, Dh]: B and H keep their own strides).
struct Atom {
  int64_t size, stride;
};
struct AtomView {
  std::vector<std::vector<Atom>> axes;
  int64_t offset = 0;

  static AtomView dense(const Shape& shape) {
    AtomView v;
    v.axes.resize(shape.size());
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      v.axes[i] = {{shape[i], stride}};
      stride *= shape[i];
    }
    return v;
  }
  Shape shape() const {
    Shape s;
    for (const auto& axis : axes) {
      int64_t n = 1;
      for (const Atom& a : axis) n *= a.size;
      s.push_back(n);
    }
    return s;
  }
  // The atoms in order, without unit ones, adjacent ones merged where laid out one after
  // the other: StridedCopy's dims and strides.
  void flat(std::vector<int64_t>& dims, std::vector<int64_t>& strides) const {
    for (const auto& axis : axes)
      for (const Atom& a : axis) {
        if (a.size == 1) continue;
        if (!dims.empty() && strides.back() == a.size * a.stride) {
          dims.back() *= a.size;
          strides.back() = a.stride;
          continue;
        }
        dims.push_back(a.size);
        strides.push_back(a.stride);
      }
  }
};

// `v` read as `shape` (the same element count): the atoms in order, regrouped; an atom a new
// axis boundary falls inside is split where its size allows (else nullopt).
std::optional<AtomView> reshape_view(const AtomView& v, const Shape& shape) {
  if (shape_numel(shape) != shape_numel(v.shape())) return std::nullopt;
  AtomView out;
  out.offset = v.offset;
  out.axes.resize(shape.size());
  if (shape_numel(shape) == 0) return AtomView::dense(shape);  // reads nothing
  std::vector<Atom> atoms;
  for (const auto& axis : v.axes)
    for (const Atom& a : axis)
      if (a.size != 1) atoms.push_back(a);
  size_t next = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t need = shape[i];
    while (need > 1) {
      if (next >= atoms.size()) return std::nullopt;
      Atom& a = atoms[next];
      if (a.size <= need) {
        if (need % a.size != 0) return std::nullopt;
        out.axes[i].push_back(a);
        need /= a.size;
        ++next;
      } else {
        if (a.size % need != 0) return std::nullopt;
        const int64_t inner = a.size / need;  // the atom's outer `need` go here, its inner rest on
        out.axes[i].push_back({need, a.stride * inner});
        a = {inner, a.stride};
        need = 1;
      }
    }
  }
  if (next != atoms.size()) return std::nullopt;
  return out;
}

// `v` with axis i narrowed to `count` elements from `start`, every `step`-th; nullopt where
// that axis is more than one atom.
std::optional<AtomView> narrowed(AtomView v, size_t i, int64_t start, int64_t count, int64_t step) {
  std::vector<Atom> real;
  for (const Atom& a : v.axes[i])
    if (a.size != 1) real.push_back(a);
  if (real.size() > 1) return std::nullopt;
  const int64_t stride = real.empty() ? 0 : real[0].stride;
  v.offset += start * stride;
  v.axes[i] = std::vector<Atom>{Atom{count, step * stride}};
  return v;
}

// Slice's inputs 1-4 (starts, ends, axes, steps) must be constants the plan holds; an axis it
// narrows must be one atom.
std::optional<AtomView> slice_of(const Plan& plan, const Step& st, const AtomView& v) {
  KernelContext probe;
  probe.op = st.ctx.op;
  probe.attrs = st.ctx.attrs;
  probe.device = st.device;
  const Shape shape = v.shape();
  probe.inputs.push_back(shape_probe(shape, plan.slots[st.inputs[0]].dtype));
  for (size_t i = 1; i < st.inputs.size(); ++i) {
    const int s = st.inputs[i];
    if (s >= 0 && !plan.slots[s].constant.defined()) return std::nullopt;
    probe.inputs.push_back(s >= 0 ? plan.slots[s].constant : Tensor());
  }
  const auto g = opdef::slice_geometry_of(probe);
  const Shape counts = g.out_shape();
  std::optional<AtomView> out = v;
  for (size_t i = 0; i < shape.size() && out; ++i) {
    if (counts[i] == shape[i] && g.start[i] == 0 && g.step[i] == 1) continue;  // untouched
    out = narrowed(std::move(*out), i, g.start[i], counts[i], g.step[i]);
  }
  return out;
}

// Split's outputs as views of `v`, one block of the split axis each, in order (their sizes are
// the output slots' extents along it); nullopt where an output is left out or the axis is
// more than one atom.
std::optional<std::vector<AtomView>> split_views(const Plan& plan, const Step& st, const AtomView& v) {
  const int64_t rank = static_cast<int64_t>(v.axes.size());
  int64_t axis = st.ctx.attrs->get_int("axis", 0);
  if (axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  std::vector<AtomView> parts;
  int64_t start = 0;
  for (int o : st.outputs) {
    if (o < 0 || plan.slots[o].shape.size() != v.axes.size()) return std::nullopt;
    const int64_t count = plan.slots[o].shape[static_cast<size_t>(axis)];
    std::optional<AtomView> part = narrowed(v, static_cast<size_t>(axis), start, count, 1);
    if (!part) return std::nullopt;
    parts.push_back(std::move(*part));
    start += count;
  }
  if (start != v.shape()[static_cast<size_t>(axis)]) return std::nullopt;
  return parts;
}

}  // namespace

void Compiler::merge_movement_chains() {
  if (!fusion_enabled()) return;
  const OpSchema* copy_op = find_op(opdef::kPortaDomain, "StridedCopy");
  if (!copy_op) return;
  std::vector<Slot>& slots = plan_->slots;
  std::vector<Step>& steps = plan_->steps;
  struct Chain {
    int root = -1;
    AtomView view;
    int copies = 0;  // kernel steps (copies) the chain runs today
  };
  std::vector<std::optional<Chain>> chain(slots.size());
  for (size_t k = 0; k < steps.size(); ++k) {
    Step& st = steps[k];
    const bool view = st.kind == StepKind::view;
    const bool onnx_kernel = st.kind == StepKind::kernel && st.ctx.op && st.ctx.op->domain.empty();
    const bool kernel = onnx_kernel && (st.op == "Transpose" || st.op == "Slice");
    const bool split = onnx_kernel && st.op == "Split";
    if ((!view && !kernel && !split) || st.prologue || st.inputs.empty() || st.outputs.empty()) continue;
    const int in = st.inputs[0], out = st.outputs[0];
    if (in < 0 || out < 0 || slots[in].device != st.device || slots[in].dtype != slots[out].dtype) continue;
    Chain c = chain[in] ? *chain[in] : Chain{in, AtomView::dense(slots[in].shape), 0};
    if (split) {
      // Each output starts a chain of its own (a block of the input, as a Slice would be); the
      // Split runs only where something still reads one of its outputs (LLaMA's packed q, k
      // and v, each then read through its head split).
      if (auto parts = split_views(*plan_, st, c.view))
        for (size_t i = 0; i < parts->size(); ++i) chain[st.outputs[i]] = Chain{c.root, std::move((*parts)[i]), c.copies + 1};
      continue;
    }
    bool single_output = true;
    for (size_t i = 1; i < st.outputs.size(); ++i) single_output &= st.outputs[i] < 0;
    if (!single_output) continue;
    std::optional<AtomView> next;
    if (view) {
      next = reshape_view(c.view, slots[out].shape);
    } else if (st.op == "Transpose") {
      const size_t rank = c.view.axes.size();
      std::vector<int64_t> perm = opdef::transpose_perm(rank, st.ctx.attrs->get_ints("perm", {}), "Transpose");
      AtomView t;
      t.offset = c.view.offset;
      for (size_t i = 0; i < rank; ++i) t.axes.push_back(c.view.axes[static_cast<size_t>(perm[i])]);
      next = std::move(t);
    } else {
      next = slice_of(*plan_, st, c.view);
    }
    if (!next || next->shape() != slots[out].shape) continue;
    c.view = std::move(*next);
    c.copies += kernel ? 1 : 0;
    chain[out] = c;
    if (!kernel || c.copies < 2) continue;
    // This copy reads its chain's first input directly, where the device has the kernel.
    std::vector<int64_t> dims, strides;
    c.view.flat(dims, strides);
    Attributes attrs;
    attrs.set("shape", std::vector<int64_t>(slots[out].shape.begin(), slots[out].shape.end()));
    attrs.set("dims", dims);
    attrs.set("strides", strides);
    attrs.set("offset", c.view.offset);
    KernelContext probe;
    probe.op = copy_op;
    probe.attrs = &attrs;
    probe.device = st.device;
    probe.backend = &backend_for(st.device);
    probe.inputs = {shape_probe(slots[c.root].shape, slots[c.root].dtype)};
    probe.outputs = {shape_probe(slots[out].shape, slots[out].dtype)};
    Resolution r = resolve_call(probe, slots[out].dtype);
    if (r.path != Path::native || !r.kernel) continue;
    plan_->attrs.push_back(std::move(attrs));
    st.op = copy_op->name;
    st.kernel = r.kernel;
    st.inputs = {c.root};
    st.constant_inputs = slots[c.root].constant.defined() ? 1 : 0;
    st.ctx = KernelContext();
    st.ctx.op = copy_op;
    st.ctx.attrs = &plan_->attrs.back();
    st.ctx.device = st.device;
    st.ctx.backend = &backend_for(st.device);
    st.ctx.inputs.resize(1);
    st.ctx.outputs.resize(st.outputs.size());
    if (st.plan_node >= 0)
      plan_->nodes[st.plan_node].reason +=
          str("; runs as one strided copy of the data-movement chain ending here (it had ", c.copies,
              " copies; the ones before it run only where something else reads them)");
  }
}

}  // namespace porta::detail::compiling

namespace porta::detail::compiling {
namespace {

// A shape-only call of kernel step `st` as its kernel's hooks see it, with operand `view_at`
// (input, or output when `output`) a strided view of `strides` from `offset`.
KernelContext step_probe(const Plan& plan, const Step& st, size_t view_at, bool output,
                         const std::vector<int64_t>& strides, int64_t offset) {
  KernelContext probe;
  probe.op = st.ctx.op;
  probe.attrs = st.ctx.attrs;
  probe.device = st.device;
  probe.backend = st.ctx.backend;
  auto of = [&](int s) { return s < 0 ? Tensor() : shape_probe(plan.slots[s].shape, plan.slots[s].dtype); };
  for (int s : st.inputs) probe.inputs.push_back(of(s));
  for (int s : st.outputs) probe.outputs.push_back(of(s));
  const Slot& slot = plan.slots[(output ? st.outputs : st.inputs)[view_at]];
  (output ? probe.outputs : probe.inputs)[view_at] =
      Tensor::zeros({1}, slot.dtype).as_strided(slot.shape, strides, offset);
  return probe;
}

// One stride per axis of `v` (0 on axes of one), or nullopt where an axis has two atoms.
std::optional<std::vector<int64_t>> plain_strides(const AtomView& v) {
  std::vector<int64_t> strides;
  for (const auto& axis : v.axes) {
    int64_t stride = 0, atoms = 0;
    for (const Atom& a : axis)
      if (a.size != 1) stride = a.stride, ++atoms;
    if (atoms > 1) return std::nullopt;
    strides.push_back(stride);
  }
  return strides;
}

// What a copy step reads of its first input, as a view of that input's dense layout, one
// group of atoms per output axis: a chain's StridedCopy (its atoms regrouped by the output's
// shape), a Transpose, or a Slice (whose bounds are the plan's constants); else nullopt.
std::optional<AtomView> copy_step_view(const Plan& plan, const Step& st, const OpSchema* copy_op) {
  const Shape& in = plan.slots[st.inputs[0]].shape;
  const Shape& out = plan.slots[st.outputs[0]].shape;
  std::optional<AtomView> view;
  if (st.ctx.op == copy_op && st.inputs.size() == 1) {
    const Attributes& a = *st.ctx.attrs;
    const std::vector<int64_t> dims = a.get_ints("dims", {}), flat_strides = a.get_ints("strides", {});
    if (dims.size() != flat_strides.size()) return std::nullopt;
    AtomView flat;
    flat.offset = a.get_int("offset", 0);
    for (size_t i = 0; i < dims.size(); ++i) flat.axes.push_back({Atom{dims[i], flat_strides[i]}});
    view = reshape_view(flat, out);
  } else if (st.ctx.op->domain.empty() && st.op == "Transpose") {
    const AtomView dense = AtomView::dense(in);
    AtomView t;
    for (int64_t axis : opdef::transpose_perm(dense.axes.size(), st.ctx.attrs->get_ints("perm", {}), "Transpose"))
      t.axes.push_back(dense.axes[static_cast<size_t>(axis)]);
    view = std::move(t);
  } else if (st.ctx.op->domain.empty() && st.op == "Slice") {
    view = slice_of(plan, st, AtomView::dense(in));
  }
  if (!view || view->shape() != out) return std::nullopt;
  return view;
}

// The view steps to rewrite (step, the chain's view of its output) and whether `slot`'s
// readers all read their views in place: kernels that say so (KernelDef::reads_view) of
// `slot` viewed as `v`, and reshape view steps, whose readers must then do the same with
// `v` regrouped to their shapes.
struct InPlaceReaders {
  const Plan& plan;
  const std::vector<std::vector<std::pair<size_t, size_t>>>& readers;
  const std::vector<bool>& output_memory;
  Device device;
  std::vector<std::pair<size_t, AtomView>> views;
  bool kernels = false;  // `slot` itself has kernel readers (it must be plain then)

  bool all(int slot, const AtomView& v, bool top) {
    if (readers[slot].empty() || output_memory[slot]) return false;
    const std::optional<std::vector<int64_t>> strides = plain_strides(v);
    for (auto [k, i] : readers[slot]) {
      const Step& r = plan.steps[k];
      if (r.prologue || r.device != device) return false;
      if (r.kind == StepKind::view && !r.strided_view && r.outputs.size() == 1 && r.outputs[0] >= 0) {
        const int out = r.outputs[0];
        const std::optional<AtomView> next = reshape_view(v, plan.slots[out].shape);
        if (!next || plan.slots[out].alias_offset >= 0 || !all(out, *next, false)) return false;
        views.emplace_back(k, *next);
        continue;
      }
      if (r.kind != StepKind::kernel || !strides || !r.kernel || !r.kernel->strided_inputs || !r.kernel->reads_view)
        return false;
      if (!r.kernel->reads_view(step_probe(plan, r, i, false, *strides, v.offset), i)) return false;
      if (top) kernels = true;
    }
    return true;
  }
};

}  // namespace

// A chain's strided copy (or a lone Transpose or Slice: a chain of one copy) whose readers all
// read its view where it lies becomes views: kernel readers that take that input strided
// (KernelDef::reads_view) get the chain's first input viewed with the chain's strides, and
// reshape view steps reading the copy become such views themselves (attention's head split: the chain ends in [B*H, S, Dh], two strides on its
// first axis, and its reader views it as [B, H, S, Dh], one stride per axis). The copy then
// does not run; on lavapipe each is a dispatch, three per attention layer for q, k and v.
// Only views of a value the plan computes (no constant or graph input), never of graph
// outputs or of blocks of another value.
void Compiler::read_chains_in_place() {
  if (!fusion_enabled()) return;
  const OpSchema* copy_op = find_op(opdef::kPortaDomain, "StridedCopy");
  if (!copy_op) return;
  std::vector<Slot>& slots = plan_->slots;
  std::vector<Step>& steps = plan_->steps;
  std::vector<std::vector<std::pair<size_t, size_t>>> readers(slots.size());  // (step, input)
  for (size_t k = 0; k < steps.size(); ++k)
    for (size_t i = 0; i < steps[k].inputs.size(); ++i)
      if (steps[k].inputs[i] >= 0) readers[steps[k].inputs[i]].emplace_back(k, i);
  std::vector<bool> output_memory(slots.size(), false);
  for (int s : plan_->output_slots)
    for (int r = s; r >= 0; r = slots[r].alias_of) output_memory[r] = true;
  std::vector<bool> dropped(steps.size(), false);
  for (size_t k = 0; k < steps.size(); ++k) {
    Step& st = steps[k];
    if (st.kind != StepKind::kernel || !st.ctx.op || st.prologue || st.inputs.empty() || st.outputs.size() != 1 ||
        st.inputs[0] < 0 || st.outputs[0] < 0)
      continue;
    const int in = st.inputs[0], out = st.outputs[0];
    const Slot &src = slots[in], &dst = slots[out];
    if (dst.alias_of >= 0 || dst.constant.defined() || src.constant.defined() || src.graph_input >= 0 ||
        src.device != st.device || dst.device != st.device || src.dtype != dst.dtype)
      continue;
    // The step's view of its input: a chain's copy, or a chain of one copy (a Transpose or a
    // Slice).
    const std::optional<AtomView> view = copy_step_view(*plan_, st, copy_op);
    if (!view) continue;
    InPlaceReaders found{*plan_, readers, output_memory, st.device, {}, false};
    if (!found.all(out, *view, true)) continue;
    auto make_view = [&](Step& step, int output, const AtomView& v) {
      step.kind = StepKind::view;
      step.kernel = nullptr;
      step.ctx = KernelContext();
      step.inputs = {in};
      step.strided_view = true;
      step.view_strides = *plain_strides(v);
      step.view_offset = v.offset;
      slots[output].alias_of = in;
    };
    for (auto& [r, v] : found.views) {
      if (plain_strides(v)) make_view(steps[r], steps[r].outputs[0], v);
      else dropped[r] = true;  // only reshapes read it, and they now view `in` themselves
    }
    if (found.kernels) {
      make_view(st, out, *view);
    } else {
      dropped[k] = true;  // nothing reads its output any more
    }
    if (st.plan_node >= 0)
      plan_->nodes[st.plan_node].reason += "; not run: its readers read its input where it lies, as a strided view (no copy)";
  }
  erase_steps(steps, dropped);
}

}  // namespace porta::detail::compiling

namespace porta::detail::compiling {

// The head merge, written in place: a value that only a chain's copy reads (through reshape
// views), and that the copy merely permutes (every element once, no offset), is written by its
// producer straight into the copy's result, through the inverse view, where the producer's
// kernel says it writes such a view (KernelDef::writes_view); the copy and the views before
// it do not run. Attention's [B, H, S, Dv] result permuted to [S, B, H*Dv] for the output
// projection is one per layer. A view step ahead of the producer binds the value as that view
// of the result's memory (Step::writes_through: the result's buffer is taken there). Only for
// results the plan owns (no graph output, constant or block of another value) and values of
// one stride per axis in it.
void Compiler::write_chains_in_place() {
  if (!fusion_enabled()) return;
  const OpSchema* copy_op = find_op(opdef::kPortaDomain, "StridedCopy");
  std::vector<Slot>& slots = plan_->slots;
  std::vector<Step>& steps = plan_->steps;
  std::vector<std::vector<size_t>> readers(slots.size());
  std::vector<std::vector<std::pair<size_t, size_t>>> writers(slots.size());  // (step, output)
  for (size_t k = 0; k < steps.size(); ++k) {
    for (int s : steps[k].inputs)
      if (s >= 0) readers[s].push_back(k);
    for (size_t i = 0; i < steps[k].outputs.size(); ++i)
      if (steps[k].outputs[i] >= 0) writers[steps[k].outputs[i]].emplace_back(k, i);
  }
  std::vector<bool> output_memory(slots.size(), false);
  for (int s : plan_->output_slots)
    for (int r = s; r >= 0; r = slots[r].alias_of) output_memory[r] = true;
  auto owned = [&](int s) {
    const Slot& sl = slots[s];
    return sl.alias_of < 0 && sl.alias_offset < 0 && !sl.constant.defined() && sl.graph_input < 0 && !output_memory[s];
  };
  std::vector<bool> dropped(steps.size(), false);
  std::vector<std::vector<Step>> before(steps.size());  // view steps to insert ahead of step k
  for (size_t t = 0; t < steps.size(); ++t) {
    const Step& st = steps[t];
    if (st.kind != StepKind::kernel || !st.ctx.op || st.prologue || st.inputs.empty() || st.inputs[0] < 0 ||
        st.outputs.size() != 1 || st.outputs[0] < 0)
      continue;
    if (!(st.ctx.op == copy_op && st.inputs.size() == 1) && !(st.ctx.op->domain.empty() && st.op == "Transpose"))
      continue;
    const int out = st.outputs[0];
    if (!owned(out) || slots[out].device != st.device || writers[out].size() != 1) continue;
    // Up from the copy's input through plain reshape views, each read only by the next.
    std::vector<size_t> path;  // the view steps
    int value = st.inputs[0];
    bool ok = readers[value].size() == 1;
    while (ok && slots[value].alias_of >= 0) {
      ok = slots[value].alias_offset < 0 && writers[value].size() == 1;
      if (!ok) break;
      const Step& v = steps[writers[value][0].first];
      ok = v.kind == StepKind::view && !v.strided_view && v.inputs.size() == 1 && v.inputs[0] == slots[value].alias_of;
      if (!ok) break;
      path.push_back(writers[value][0].first);
      value = v.inputs[0];
      ok = readers[value].size() == 1;
    }
    const int root = value;
    if (!ok || !owned(root) || writers[root].size() != 1 || slots[root].dtype != slots[out].dtype ||
        slots[root].device != st.device)
      continue;
    const auto [p, j] = writers[root][0];
    const Step& producer = steps[p];
    if (producer.kind != StepKind::kernel || producer.prologue || !producer.kernel || !producer.kernel->writes_view)
      continue;
    // The copy's view of the root's dense layout (the views between them are reshapes of it).
    const std::optional<AtomView> view = copy_step_view(*plan_, st, copy_op);
    if (!view || view->offset != 0) continue;
    // Each atom's stride in the result (row-major over the result's axes, atoms in order).
    struct Placed {
      Atom atom;
      int64_t out_stride;
    };
    std::vector<Placed> placed;
    int64_t stride = 1;
    for (size_t i = view->axes.size(); i-- > 0;)
      for (size_t k = view->axes[i].size(); k-- > 0;) {
        const Atom& a = view->axes[i][k];
        if (a.size != 1) placed.push_back({a, stride});
        stride *= a.size;
      }
    // A permutation: the atoms, by their stride in the root, tile it densely.
    std::sort(placed.begin(), placed.end(), [](const Placed& x, const Placed& y) { return x.atom.stride < y.atom.stride; });
    int64_t expect = 1;
    for (const Placed& q : placed) {
      ok = ok && q.atom.stride == expect;
      expect *= q.atom.size;
    }
    const Shape& root_shape = slots[root].shape;
    if (!ok || expect != shape_numel(root_shape) || shape_numel(root_shape) == 0) continue;
    // Each axis of the root inside one atom (an atom may hold several: the [B*H, S, D] view
    // of attention's [B, H, S, D]), so one stride in the result.
    std::vector<int64_t> strides(root_shape.size(), 0);
    int64_t dense_stride = 1;
    for (size_t i = root_shape.size(); ok && i-- > 0;) {
      if (root_shape[i] != 1) {
        auto at = std::find_if(placed.begin(), placed.end(), [&](const Placed& q) {
          return q.atom.stride <= dense_stride && dense_stride < q.atom.stride * q.atom.size;
        });
        ok = at != placed.end() && dense_stride % at->atom.stride == 0 &&
             dense_stride * root_shape[i] <= at->atom.stride * at->atom.size;
        if (ok) strides[i] = at->out_stride * (dense_stride / at->atom.stride);
      }
      dense_stride *= root_shape[i];
    }
    if (!ok) continue;
    if (!producer.kernel->writes_view(step_probe(*plan_, producer, j, true, strides, 0), j)) continue;
    Step bind;
    bind.kind = StepKind::view;
    bind.name = producer.name;
    bind.op = producer.op;
    bind.device = producer.device;
    bind.inputs = {out};
    bind.outputs = {root};
    bind.plan_node = -1;
    bind.strided_view = true;
    bind.writes_through = true;
    bind.view_strides = strides;
    before[p].push_back(std::move(bind));
    slots[root].alias_of = out;
    dropped[t] = true;
    for (size_t v : path) dropped[v] = true;
    if (st.plan_node >= 0)
      plan_->nodes[st.plan_node].reason += "; not run: its input's producer writes it here in place, through a strided view";
    if (producer.plan_node >= 0)
      plan_->nodes[producer.plan_node].reason += "; writes its result through a strided view of the permuted copy's";
  }
  std::vector<Step> kept;
  for (size_t k = 0; k < steps.size(); ++k) {
    for (Step& b : before[k]) kept.push_back(std::move(b));
    if (!dropped[k]) kept.push_back(std::move(steps[k]));
  }
  steps = std::move(kept);
}

}  // namespace porta::detail::compiling
