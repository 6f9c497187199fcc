// porta runtime — Session: input checks, plan cache per input shapes, execution with
// per-device batching, optional per-node profiling.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_map>

#include "porta/error.hpp"
#include "porta/session.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/kernel_call.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/precision.hpp"
#include "runtime/session_plan.hpp"

namespace porta {

using detail::Slot;

namespace {

// The inference-only graph rewrites (runtime/graph_fusion.hpp), in order: unread outputs go
// first (they free views and fusions), BatchNormalization and Pad fold into their Conv, a
// Linear layer's bias Add into its MatMul, GELU becomes one node, a shortcut Add fuses into its Conv, then activations into what precedes
// them (after the Add, so Act(Conv + residual) is one node).
std::shared_ptr<const Graph> rewritten(std::shared_ptr<const Graph> g, const SessionOptions& o) {
  const bool on = !o.keep_values;
  g = detail::drop_unread_outputs(g, on);
  g = detail::fold_conv_batch_norm(g);
  g = detail::fold_pads(g, on);
  g = detail::fuse_matmul_bias(g, o.device, on);
  g = detail::fuse_gelu(g, o.device, on);
  return detail::fuse_activations(g, o.device, on);
}

// The rewrites that need every value's shape, for one plan's input shapes: Convs drop the taps
// that read only padding (atrous convs over small maps), squeeze-and-excitation
// blocks and gated linear units (whose Convs and MatMuls carry their activations and biases by
// then) become one node each where the device's kernel takes them at these shapes;
// LayerNormalization, RMSNorm and rotary embeddings written out become one node each (an
// RmsNorm read by projections alone then goes into them: RmsNormMatMul, GatedLinear's
// rms_epsilon), a BatchNormalization read by pointwise Convs alone goes into them (PreActConv),
// attention written as its
// pieces one node, Transposes of rows move across row-wise products (into the copies next to
// them), a shortcut or residual Add fuses into its Conv, MatMul or Gemm (only where the shapes
// match), then the activation after it; what is left of elementwise chains becomes one node
// each. Returns `g` itself when nothing fuses.
std::shared_ptr<const Graph> rewritten_for_shapes(const std::shared_ptr<const Graph>& g, const SessionOptions& o,
                                                  const std::vector<Shape>& shapes, const std::vector<Tensor>& values) {
  const bool on = !o.keep_values;
  if (!on || !detail::fusion_enabled() ||
      (!detail::residual_add_candidates(*g, o.device) && !detail::attention_candidates(*g) &&
       !detail::elementwise_chain_candidates(*g, o.device) && !detail::norm_candidates(*g) &&
       !detail::rotary_candidates(*g) && !detail::row_transpose_candidates(*g) &&
       !detail::squeeze_excite_candidates(*g, o.device) && !detail::gated_linear_candidates(*g, o.device) &&
       !detail::padding_tap_candidates(*g) && !detail::rms_norm_matmul_candidates(*g, o.device) &&
       !detail::pre_act_conv_candidates(*g, o.device)))
    return g;
  auto annotated = std::make_shared<Graph>(*g);
  detail::annotate_shapes(*annotated, shapes, values);
  auto fused = detail::trim_padding_taps(annotated, on);
  fused = detail::fuse_gated_linear(detail::fuse_squeeze_excite(fused, o.device, on), o.device, on);
  fused = detail::fuse_rotary(detail::fuse_norms(fused, o.device, on), o.device, on);
  fused = detail::fuse_rms_norm_matmul(fused, o.device, on);
  fused = detail::fuse_pre_act_conv(fused, o.device, on);
  fused = detail::move_row_transposes(detail::fuse_attention(fused, o.device, on), o.device, on);
  fused = detail::fuse_residual_add(fused, o.device, on);
  if (fused != annotated) fused = detail::fuse_activations(fused, o.device, on);
  fused = detail::fuse_elementwise_chains(fused, o.device, on);
  return fused == annotated ? g : fused;
}

// Live sessions per model graph: a session frees weights its kernels hold (release_if_held)
// only while it is the one session of its model, and creating another waits while it does.
struct SessionRegistry {
  std::mutex mutex;
  std::unordered_map<const Graph*, int> live;
};
SessionRegistry& session_registry() {
  static SessionRegistry* r = new SessionRegistry();
  return *r;
}

}  // namespace

// A session's place in the registry, from before anything of it reads the model's weights
// (the graph rewrites fold some) until it is gone.
struct SessionRegistration {
  const Graph* graph;
  explicit SessionRegistration(const Graph* g) : graph(g) {
    std::lock_guard lock(session_registry().mutex);
    ++session_registry().live[graph];
  }
  ~SessionRegistration() {
    std::lock_guard lock(session_registry().mutex);
    auto it = session_registry().live.find(graph);
    if (it != session_registry().live.end() && --it->second <= 0) session_registry().live.erase(it);
  }
  SessionRegistration(const SessionRegistration&) = delete;
  SessionRegistration& operator=(const SessionRegistration&) = delete;
};

struct Session::Impl {
  Model model;
  SessionRegistration registration{model.graph_ptr().get()};
  SessionOptions options;
  std::shared_ptr<const Graph> graph;  // the model's graph after inference-only rewrites
  // Keyed by input shapes plus the bytes of shape-deciding inputs.
  std::map<std::pair<std::vector<Shape>, std::string>, std::unique_ptr<detail::Plan>> plans;
  std::vector<bool> value_inputs;
  detail::PrecisionCache converted;  // weights in the low precision, shared by every plan
  detail::Plan* last = nullptr;
  std::vector<NodeProfile> profile;
  std::atomic<bool> busy{false};
  bool last_replayed = false;

  // A run of a plan whose device work was kept (Plan::Replay): the inputs are copied into the
  // tensors the kept commands read, the commands submitted again, and the outputs copied out.
  std::vector<Tensor> run_kept(detail::Plan& plan, const std::map<std::string, Tensor>& inputs);

  Impl(Model m, SessionOptions o)
      : model(std::move(m)),
        options(o),
        graph(rewritten(model.graph_ptr(), o)),
        value_inputs(detail::shape_deciding_inputs(*graph)) {}

  // `host` holds host copies of the inputs in value_inputs (others may be undefined).
  detail::Plan& plan_for(const std::vector<Shape>& shapes, const std::vector<Tensor>& host) {
    std::string value_key;
    std::vector<Tensor> values(shapes.size());
    for (size_t k = 0; k < shapes.size(); ++k) {
      if (!value_inputs[k]) continue;
      const Tensor& t = host.at(k);
      const ValueDesc& d = model.inputs()[k];
      if (!t.defined())
        throw InvalidArgument(str("[session] input '", d.name, "' decides output shapes; its value is needed"));
      if (t.numel() > 4096)
        throw Unsupported(str("[session] input '", d.name, "' decides output shapes and has ", t.numel(),
                              " elements; porta specialises plans on such inputs up to 4096 elements"));
      values[k] = t;
      value_key.append(static_cast<const char*>(t.raw_data()), t.nbytes());
      value_key.push_back('|');
    }
    auto key = std::make_pair(shapes, value_key);
    auto it = plans.find(key);
    if (it != plans.end()) return *it->second;
    if (plans.size() >= 64) plans.clear();  // bound the cache for ever-changing shapes
    std::shared_ptr<const Graph> g = rewritten_for_shapes(graph, options, shapes, values);
    auto plan = detail::compile_plan(*g, options, shapes, values, &converted);
    plan->graph = g;  // the plan's steps were made from this graph; it lives as long
    return *plans.emplace(key, std::move(plan)).first->second;
  }

  // Per constant slot of `plan`: the (step index, input index) of every read, in order.
  using ConstantReaders = std::vector<std::pair<int, size_t>>;

  // Frees the bytes of constant slot `slot` (`readers`: every read of its storage, through any
  // slot) when every step of `plan` that reads it keeps it in
  // its prepared state (KernelContext::held: a weight packed for a primitive), so the session
  // holds one copy of such a weight, not two; the storage rebuilds its bytes from that state
  // if anything reads it again (Storage::release). Called on a plan's first run, after the
  // slot's last reader ran (so the weights go one by one: the peak is not plain + packed).
  // Only while this is the one live session of its model (session_registry), so no other
  // session can be reading the bytes; never for values the session reports (keep_values,
  // graph outputs) or constants that are views of a larger storage.
  void release_if_held(detail::Plan& plan, int slot, const ConstantReaders& readers) {
    const detail::Slot& sl = plan.slots[slot];
    const Tensor& t = sl.constant;
    if (!t.defined() || t.offset() != 0 || !t.is_contiguous() || t.nbytes() != t.storage()->bytes() ||
        t.storage()->released())
      return;
    for (const detail::Slot& other : plan.slots)  // the slot, or another holding its storage, is reported
      if (other.graph_output && other.constant.defined() && other.constant.storage() == t.storage()) return;
    std::function<void(void*)> rebuild;
    for (auto [k, i] : readers) {
      const detail::Step& step = plan.steps[k];
      const KernelContext::HeldInput* held = nullptr;
      for (const auto& h : step.ctx.held)
        if (h.input == i) held = &h;
      if (!held) return;
      if (!rebuild) rebuild = held->rebuild;
    }
    if (!rebuild) return;
    std::lock_guard lock(session_registry().mutex);
    if (session_registry().live[registration.graph] != 1) return;
    t.storage()->release(std::move(rebuild));
  }
};

namespace {

struct BusyGuard {
  std::atomic<bool>& flag;
  explicit BusyGuard(std::atomic<bool>& f) : flag(f) {
    if (flag.exchange(true))
      throw InvalidArgument("[session] this session is already running on another thread; a Session "
                            "serves one thread at a time (create one Session per thread)");
  }
  ~BusyGuard() { flag = false; }
};

void check_shape(const ValueDesc& d, const Shape& got) {
  if (!d.rank_known || (d.shape.empty() && got.empty())) return;
  bool ok = d.shape.size() == got.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = d.shape[i] < 0 || d.shape[i] == got[i];
  if (!ok)
    throw ShapeError(str("[session] input '", d.name, "' should have shape ", shape_str(d.shape),
                         " (? = any), got ", shape_str(got)));
}

// "node 'conv1' (Conv)": how errors name the step that raised them.
std::string node_label(const detail::Step& step) {
  return step.op.empty() ? str("node '", step.name, "'") : str("node '", step.name, "' (", step.op, ")");
}

// Why a plan's runs cannot be replayed ("" when they may be: Plan::Replay).
std::string why_not_replayed(const detail::Plan& plan, const SessionOptions& o) {
  if (!o.replay) return "SessionOptions::replay is off";
  if (o.device.type == DeviceType::cpu) return "the cpu runs its kernels directly";
  if (o.profile) return "profiling times every node";
  if (o.keep_values) return "keep_values binds every value each run";
  if (!plan.host_input_slots.empty()) return "the run reads graph inputs on the host";
  for (const detail::Step& step : plan.steps) {
    if (step.kind != detail::StepKind::view && step.device != o.device)
      return str(node_label(step), " runs on ", step.device.str());
    for (int hs : step.host_copy_slots)
      if (hs >= 0 && !plan.slots[hs].constant.defined())
        return str(node_label(step), " reads a value of the run on the host");
  }
  return "";
}

void allocate_buffers(detail::Plan& plan) {
  if (plan.allocated) return;
  for (auto& b : plan.buffers)
    if (!b.storage.defined()) b.storage = Tensor::empty({static_cast<int64_t>(b.bytes)}, DType::u8, b.device);
  for (auto& s : plan.slots) {
    if (s.buffer < 0) continue;
    s.tensor = plan.buffers[s.buffer].storage.reinterpret(s.shape, s.dtype);
  }
  // Fixed blocks of other slots (Concat in place), nested ones too: bound from their root.
  for (auto& s : plan.slots) {
    if (s.alias_offset < 0) continue;
    int64_t offset = 0;
    const detail::Slot* r = &s;
    while (r->alias_of >= 0) {
      if (r->alias_offset < 0) throw BackendError("[session] internal: a fixed block inside a view step's alias");
      offset += r->alias_offset;
      r = &plan.slots[static_cast<size_t>(r->alias_of)];
    }
    s.tensor = r->tensor.reshape({shape_numel(r->shape)}).as_strided(s.shape, contiguous_strides(s.shape), offset);
  }
  plan.allocated = true;
}

}  // namespace

Session::Session(Model model, SessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), options)) {
  backend_for(options.device);  // throws BackendUnavailable with the reason
  detail::low_precision_dtype(options.precision, options.device);  // refuses a value outside the enum
}
Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const Model& Session::model() const { return impl_->model; }
const SessionOptions& Session::options() const { return impl_->options; }
const std::vector<NodeProfile>& Session::profile() const { return impl_->profile; }

std::vector<NodePlan> Session::plan(const std::map<std::string, Shape>& input_shapes) {
  BusyGuard guard(impl_->busy);
  const auto& descs = impl_->model.inputs();
  std::vector<Shape> shapes;
  for (auto& d : descs) {
    auto it = input_shapes.find(d.name);
    Shape s = d.shape;
    if (it != input_shapes.end()) {
      check_shape(d, it->second);
      s = it->second;
    }
    for (auto& x : s)
      if (x < 0) x = 1;
    shapes.push_back(s);
  }
  std::vector<Tensor> host(shapes.size());
  for (size_t k = 0; k < shapes.size(); ++k)
    if (impl_->value_inputs[k])
      throw InvalidArgument(str("[session] input '", descs[k].name,
                                "' decides output shapes: plan with input values (plan(inputs))"));
  return impl_->plan_for(shapes, host).nodes;
}

namespace {

// Names in `inputs` that the model lacks are refused, naming the model's inputs.
void check_input_names(const std::vector<ValueDesc>& descs, const std::map<std::string, Tensor>& inputs) {
  for (auto& [name, t] : inputs) {
    bool known = false;
    for (auto& d : descs) known |= d.name == name;
    if (!known) {
      std::string names;
      for (auto& d : descs) names += str(names.empty() ? "" : ", ", "'", d.name, "'");
      throw InvalidArgument(str("[session] the model has no input '", name, "'; its inputs are ", names));
    }
  }
}

// The input `d` from `inputs`, or the error saying it was not given.
const Tensor& given_input(const ValueDesc& d, const std::map<std::string, Tensor>& inputs) {
  auto it = inputs.find(d.name);
  if (it == inputs.end())
    throw InvalidArgument(str("[session] input '", d.name, "' (", dtype_name(d.dtype), " ", shape_str(d.shape),
                              ") was not given"));
  return it->second;
}

}  // namespace

std::vector<NodePlan> Session::plan(const std::map<std::string, Tensor>& inputs) {
  std::vector<Shape> shapes;
  std::vector<Tensor> host;
  BusyGuard guard(impl_->busy);
  check_input_names(impl_->model.inputs(), inputs);
  for (auto& d : impl_->model.inputs()) {
    const Tensor& t = given_input(d, inputs);
    check_shape(d, t.shape());
    shapes.push_back(t.shape());
    host.push_back(t.to(Device::cpu()).contiguous());
  }
  return impl_->plan_for(shapes, host).nodes;
}

std::map<std::string, Tensor> Session::values() const {
  std::map<std::string, Tensor> out;
  if (!impl_->last) return out;
  for (auto& [name, value] : impl_->last->kept_constants) out[name] = value;
  for (auto& [name, slot] : impl_->last->kept_slots) {
    const Tensor& t = impl_->last->slots[slot].tensor;
    if (t.defined()) out[name] = t;
  }
  return out;
}

std::vector<Tensor> Session::Impl::run_kept(detail::Plan& plan, const std::map<std::string, Tensor>& inputs) {
  detail::Plan::Replay& rp = plan.replay;
  const Device device = options.device;
  const auto& descs = model.inputs();
  Backend& backend = backend_for(device);
  std::vector<Tensor> outputs;
  backend.begin_batch(device.index);
  try {
    for (size_t k = 0; k < descs.size(); ++k) {
      try {
        rp.inputs.at(k).copy_(given_input(descs[k], inputs));
      } catch (...) {
        detail::rethrow_with_context(str("input '", descs[k].name, "' to ", device.str()));
      }
    }
    backend.replay(device.index, rp.commands);
    for (const Tensor& t : rp.outputs) outputs.push_back(t.clone());
  } catch (...) {
    try {
      backend.end_batch(device.index);
    } catch (...) {
    }
    throw;
  }
  backend.end_batch(device.index);
  profile.clear();
  last_replayed = true;
  rp.runs++;
  return outputs;
}

bool Session::replayed() const { return impl_->last_replayed; }

std::string Session::replay_blocker() const { return impl_->last ? impl_->last->replay.blocker : ""; }

std::map<std::string, size_t> Session::peak_memory() const {
  std::map<std::string, size_t> out;
  if (!impl_->last) return out;
  for (auto& b : impl_->last->buffers) out[b.device.str()] += b.bytes;
  for (auto& s : impl_->last->slots) {
    size_t bytes = static_cast<size_t>(shape_numel(s.shape)) * dtype_size(s.dtype);
    if (s.constant.defined() || s.graph_input >= 0 || (s.graph_output && s.alias_of < 0 && !s.constant.defined()))
      out[s.device.str()] += bytes;
  }
  return out;
}

std::vector<Tensor> Session::run(const std::map<std::string, Tensor>& inputs) {
  BusyGuard guard(impl_->busy);
  const auto& descs = impl_->model.inputs();
  const Device device = impl_->options.device;
  check_input_names(descs, inputs);
  std::vector<Shape> shapes;
  for (auto& d : descs) {
    const Tensor& t = given_input(d, inputs);
    if (!t.defined()) throw InvalidArgument(str("[session] input '", d.name, "' is an undefined tensor"));
    if (t.dtype() != d.dtype)
      throw DTypeError(str("[session] input '", d.name, "' should be ", dtype_name(d.dtype), ", got ",
                           dtype_name(t.dtype())));
    check_shape(d, t.shape());
    shapes.push_back(t.shape());
  }
  std::vector<Tensor> host(descs.size());
  for (size_t k = 0; k < descs.size(); ++k)
    if (impl_->value_inputs[k]) host[k] = inputs.at(descs[k].name).to(Device::cpu()).contiguous();
  detail::Plan& plan = impl_->plan_for(shapes, host);
  impl_->last = &plan;
  impl_->last_replayed = false;
  allocate_buffers(plan);

  detail::Plan::Replay& rp = plan.replay;
  if (!rp.checked) {
    rp.blocker = why_not_replayed(plan, impl_->options);
    rp.checked = true;
  }
  if (rp.commands) return impl_->run_kept(plan, inputs);
  // The second run notes what it records; the third also keeps it (up to two tries).
  bool noting = rp.blocker.empty() && rp.runs >= 1;
  const bool keeping = noting && rp.signature != 0;

  std::vector<Tensor> bound;
  for (auto& d : descs) {
    const Tensor& t = given_input(d, inputs);
    try {
      bound.push_back(t.to(device).contiguous());
      // A kept run's inputs are the session's: later runs copy theirs into them.
      if (keeping && bound.back().storage() == t.storage()) bound.back() = t.clone();
    } catch (...) {
      detail::rethrow_with_context(str("input '", d.name, "' to ", device.str()));
    }
  }

  auto& slots = plan.slots;
  for (size_t k = 0; k < plan.input_slots.size(); ++k) slots[plan.input_slots[k]].tensor = bound[k];
  for (auto [k, s] : plan.host_input_slots) {
    try {
      slots[s].tensor = given_input(descs.at(k), inputs).to(Device::cpu()).contiguous();
    } catch (...) {
      detail::rethrow_with_context(str("input '", descs.at(k).name, "' to cpu"));
    }
  }
  for (auto& s : slots) {
    if (s.constant.defined()) s.tensor = s.constant;
    else if (s.graph_output && s.alias_of < 0 && s.graph_input < 0) s.tensor = Tensor();
  }
  const bool profiling = impl_->options.profile;
  impl_->profile.clear();
  // A plan's first run frees weights its kernels hold (Impl::release_if_held): the readers of
  // each constant storage (slots may share one: a folded Identity passes its constant on),
  // filed under the first slot that holds it, and the step after which to look.
  std::map<int, Impl::ConstantReaders> readers;
  std::vector<std::vector<int>> release_after;
  if (!plan.weights_released) {
    std::map<const void*, int> first_slot;  // storage -> the slot its readers are filed under
    for (size_t s = 0; s < slots.size(); ++s)
      if (slots[s].constant.defined()) first_slot.emplace(slots[s].constant.storage().get(), static_cast<int>(s));
    for (size_t k = 0; k < plan.steps.size(); ++k) {
      const detail::Step& step = plan.steps[k];
      for (size_t i = 0; i < step.inputs.size(); ++i)
        if (step.inputs[i] >= 0 && slots[step.inputs[i]].constant.defined())
          readers[first_slot.at(slots[step.inputs[i]].constant.storage().get())].push_back({static_cast<int>(k), i});
      // A host copy is a read no kernel holds (input index past the step's): it keeps the bytes.
      for (int hs : step.host_copy_slots)
        if (hs >= 0 && slots[hs].constant.defined())
          readers[first_slot.at(slots[hs].constant.storage().get())].push_back({static_cast<int>(k), step.inputs.size()});
      if (step.kind == detail::StepKind::kernel)
        for (size_t i = 0; i < step.outputs.size(); ++i)
          if (step.outputs[i] >= 0 && slots[step.outputs[i]].graph_output)
            plan.output_writers.push_back({static_cast<int>(k), static_cast<int>(i)});
    }
    if (!impl_->options.keep_values) {
      release_after.resize(plan.steps.size());
      for (auto& [s, r] : readers) release_after[r.back().first].push_back(s);
    }
  }
  plan.weights_released = true;

  Backend* batch_backend = nullptr;
  Device batch_device;
  size_t batch_last = 0;  // the last step recorded into the open batch
  // Ending a batch submits it: a device error there names the batch's last node.
  auto end_batch = [&] {
    if (!batch_backend) return;
    Backend* backend = batch_backend;
    batch_backend = nullptr;
    try {
      backend->end_batch(batch_device.index);
    } catch (...) {
      detail::rethrow_with_context(str("batch ending at ", node_label(plan.steps.at(batch_last))));
    }
  };
  std::vector<Tensor> outputs;
  Backend& device_backend = backend_for(device);
  bool recording = false;
  if (noting) {
    if (!device_backend.replays(device.index))
      rp.blocker = str("the ", device_type_name(device.type), " backend does not replay");
    else
      recording = device_backend.begin_recording(device.index, keeping);  // false: another session's is open
  }
  try {
    for (size_t step_index = 0; step_index < plan.steps.size(); ++step_index) {
      detail::Step& step = plan.steps[step_index];
      if (step.device.type != DeviceType::cpu && (!batch_backend || batch_device != step.device)) {
        end_batch();
        batch_backend = &backend_for(step.device);
        batch_device = step.device;
        batch_backend->begin_batch(batch_device.index);
      } else if (step.device.type == DeviceType::cpu) {
        end_batch();
      }
      // Bind outputs that are fresh each run (graph outputs) and views.
      for (int s : step.outputs) {
        if (s < 0) continue;
        Slot& sl = slots[s];
        if (sl.alias_of >= 0) continue;
        if (sl.tensor.defined()) continue;
        // The caller's last output of this slot, if the caller has let go of it (only the
        // session's reference is left, so nothing can read or keep it any more).
        if (sl.handed.defined() && sl.handed.storage().use_count() == 1 && sl.handed.shape() == sl.shape &&
            sl.handed.dtype() == sl.dtype && sl.handed.device() == sl.device)
          sl.tensor = sl.handed;
        else
          sl.tensor = Tensor::empty(sl.shape, sl.dtype, sl.device);
        sl.handed = Tensor();
      }
      std::unique_ptr<Timer> timer;
      std::chrono::steady_clock::time_point t0;
      if (profiling) {
        timer = backend_for(step.device).create_timer(step.device.index);
        if (timer) timer->start();
        t0 = std::chrono::steady_clock::now();
      }
      try {
        switch (step.kind) {
          case detail::StepKind::view: {
            Slot& out = slots[step.outputs[0]];
            const Tensor& in = slots[step.inputs[0]].tensor;
            if (step.strided_view) {
              if (!in.is_contiguous())
                throw BackendError("[session] internal: a strided view step reads a non-contiguous value");
              out.tensor = in.as_strided(out.shape, step.view_strides, in.offset() + step.view_offset);
            } else {
              out.tensor = in.reshape(out.shape);
            }
            break;
          }
          case detail::StepKind::copy:
            slots[step.outputs[0]].tensor.copy_(slots[step.inputs[0]].tensor);
            break;
          case detail::StepKind::kernel: {
            KernelContext& ctx = step.ctx;
            for (size_t i = 0; i < step.inputs.size(); ++i)
              ctx.inputs[i] = step.inputs[i] < 0 ? Tensor() : slots[step.inputs[i]].tensor;
            for (size_t i = 0; i < step.outputs.size(); ++i)
              ctx.outputs[i] = step.outputs[i] < 0 ? Tensor() : slots[step.outputs[i]].tensor;
            ctx.constant_inputs = step.constant_inputs;
            for (size_t i = 0; i < step.host_copy_slots.size(); ++i)
              ctx.host_copies[i] = step.host_copy_slots[i] < 0 ? Tensor() : slots[step.host_copy_slots[i]].tensor;
            detail::run_kernel(*step.kernel, ctx);
            break;
          }
        }
      } catch (...) {
        detail::rethrow_with_context(node_label(step));
      }
      if (!release_after.empty())
        for (int s : release_after[step_index]) impl_->release_if_held(plan, s, readers.at(s));
      if (batch_backend) batch_last = step_index;
      if (profiling) {
        double us;
        if (timer) {
          timer->stop();
          us = timer->elapsed_us();
        } else {
          us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        }
        impl_->profile.push_back({step.name, step.op, step.device, us, step.kernel ? step.kernel->impl.name : ""});
      }
    }
    bool kept = false;
    if (recording) {
      recording = false;
      RecordedRun r = device_backend.end_recording(device.index);
      if (!r.not_replayable.empty() && !r.transient) {
        rp.blocker = r.not_replayable;
      } else if (!r.not_replayable.empty()) {
        r.signature = 0;  // another thread's work got in: says nothing of the plan's; noted again
      } else if (keeping && r.commands && r.signature == rp.signature) {
        rp.commands = r.commands;
        rp.inputs = bound;
        rp.outputs.clear();
        for (int s : plan.output_slots) rp.outputs.push_back(slots[s].tensor);
        kept = true;
      } else if (keeping && ++rp.attempts == 2) {
        rp.blocker = "its runs recorded different work (twice)";
      }  // else: recorded other work than the run before: noted again, tried once more
      rp.signature = r.signature;
    }
    // Outputs the caller cannot own as they are (views, inputs, constants, a kept run's) are
    // copied while the last batch is open, so the copies go up with it rather than in a
    // submission of their own.
    for (int s : plan.output_slots) {
      Slot& sl = slots[s];
      bool owned = sl.graph_output && sl.alias_of < 0 && sl.graph_input < 0 && !sl.constant.defined() && !kept;
      outputs.push_back(owned ? sl.tensor : sl.tensor.clone());
    }
    end_batch();
  } catch (...) {
    if (recording) {
      try {
        device_backend.end_recording(device.index);
      } catch (...) {
      }
    }
    try {
      end_batch();
    } catch (...) {
    }
    throw;
  }
  rp.runs++;
  // Graph outputs are handed to the caller: the next run writes new ones, into the same buffer
  // once the caller has let go of it (Slot::handed); with keep_values they stay bound until
  // then, so values() can report them too.
  if (!impl_->options.keep_values) {
    for (int s : plan.output_slots)
      if (slots[s].alias_of < 0 && slots[s].graph_input < 0 && !slots[s].constant.defined()) {
        slots[s].handed = std::move(slots[s].tensor);
        slots[s].tensor = Tensor();
      }
    // The steps that wrote them let go too, so the caller's copy is the only other owner.
    for (auto [k, i] : plan.output_writers) plan.steps[k].ctx.outputs[i] = Tensor();
  }
  for (size_t k = 0; k < plan.input_slots.size(); ++k) slots[plan.input_slots[k]].tensor = Tensor();
  for (auto [k, s] : plan.host_input_slots) slots[s].tensor = Tensor();
  return outputs;
}

}  // namespace porta
