// LSTM and GRU on vulkan (layouts 0 and 1), three implementations. On CPU-like devices (lavapipe)
// "persistent" and "steps" compute the input projections of every step in one texel GEMM
// (matmul_texel.comp), then run the steps in rnn_step.comp (an invocation per 4 hidden units, R
// transposed once per session step when it is a constant, R and the state read as vec4 texels),
// f32 with the hidden and input sizes multiples of 4, and GRU with linear_before_reset = 1
// (PyTorch's): "persistent" runs as many steps per dispatch as the driver's loop cap allows, one
// workgroup per sequence (the previous h in shared memory, two barriers a step), where a step
// is small (lavapipe's hand-off of a dispatch to its thread pool then costs more than spreading
// the step over the device gains); "steps" runs one dispatch per time step, no barriers. "sequence" (rnn.comp) takes every call:
// each workgroup runs one (direction, batch entry) sequence, the steps split over as few
// dispatches as the driver's loop cap allows (one where it has none); h and c pass between them
// through a scratch buffer. Sequence lengths are checked on the host (a length outside
// [0, seq] is a ShapeError) and passed as int32.
#include <algorithm>
#include <cmath>

#include "kernels/vulkan/movement.hpp"
#include "kernels/vulkan/texel_gemm.hpp"
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

const Tensor* output_if(const KernelContext& ctx, size_t i) {
  return i < ctx.outputs.size() && ctx.outputs[i].defined() ? &ctx.outputs[i] : nullptr;
}

constexpr uint32_t kLocalSize = 256;

// Upper bounds of the loop iterations one invocation of rnn.comp runs (vk_kernel.hpp's way of
// counting: a loop costs its iterations plus one, a barrier one): per time step, and once per
// dispatch (state load and store).
struct RnnLoops {
  uint64_t per_step, per_dispatch;
};
RnnLoops rnn_loops(int gates, int64_t hidden, int64_t input_size) {
  auto per_thread = [](int64_t n) { return static_cast<uint64_t>((n + kLocalSize - 1) / kLocalSize); };
  uint64_t h = static_cast<uint64_t>(hidden), i = static_cast<uint64_t>(input_size);
  uint64_t rows = per_thread(gates * hidden), units = per_thread(hidden);
  uint64_t gate_rows = rows + 1 + rows * ((i + 1) + (h + 1));  // x.W and h.R per row
  uint64_t cell = gates == 4 ? units + 1                        // LSTM: one loop over the units
                             : 3 * (units + 1) + units * (h + 1);  // GRU: z/r, candidate (h loop), copy
  uint64_t per_step = gate_rows + cell + (units + 1) + 1 + 5;   // Y store, the step loop, barriers
  return {per_step, 2 * (units + 1) + 2};
}

// Steps one dispatch may run within the driver's loop cap (0: not even one fits).
int64_t rnn_steps_per_dispatch(const KernelContext& ctx, int gates, int64_t hidden, int64_t input_size) {
  RnnLoops loops = rnn_loops(gates, hidden, input_size);
  uint64_t limit = loop_limit(ctx);
  if (limit == UINT64_MAX) return INT64_MAX;
  if (limit < loops.per_dispatch + loops.per_step) return 0;
  return static_cast<int64_t>((limit - loops.per_dispatch) / loops.per_step);
}

// The per-sequence lengths as int32 (seq each without sequence_lens); ShapeError outside [0, seq].
std::vector<int32_t> sequence_lengths(const KernelContext& ctx, int64_t seq, int64_t batch) {
  std::vector<int32_t> lens(static_cast<size_t>(batch), static_cast<int32_t>(seq));
  if (ctx.has_input(4)) {
    std::vector<double> given = ctx.on_host(4).to_doubles();
    for (size_t b = 0; b < lens.size(); ++b) {
      if (given.at(b) < 0 || given[b] > static_cast<double>(seq))
        throw ShapeError(str("[", ctx.op->name, "] expected sequence_lens in [0, ", seq, "], got ", given[b],
                             " for batch ", b));
      lens[b] = static_cast<int32_t>(given[b]);
    }
  }
  return lens;
}

// What both implementations bind besides the weights: the lengths on the device, the
// direction mask, and per optional input its tensor (X stands in for an absent one) with the
// shaders' flag bits (1 B, 2 initial_h, 4 initial_c, 8 P, 128 layout 1; outputs add 16/32/64).
struct RnnBindings {
  Tensor lens;
  uint32_t reverse_mask = 0, flags = 0;
  const Tensor* bias = nullptr;
  const Tensor *h0 = nullptr, *c0 = nullptr, *peep = nullptr;
};
RnnBindings rnn_bindings(const KernelContext& ctx, const std::vector<int32_t>& lens, bool batch_major, bool lstm) {
  RnnBindings b;
  b.lens = Tensor::from_host(lens.data(), {static_cast<int64_t>(lens.size())}, DType::i32, ctx.device);
  const std::string dir = ctx.attrs->get_string("direction", "forward");
  b.reverse_mask = dir == "reverse" ? 1u : dir == "bidirectional" ? 2u : 0u;
  b.flags = batch_major ? 128u : 0u;
  auto opt_in = [&](size_t i, uint32_t bit) -> const Tensor* {
    if (!ctx.has_input(i)) return &ctx.in(0);
    b.flags |= bit;
    return &ctx.in(i);
  };
  b.bias = opt_in(3, 1);
  b.h0 = opt_in(5, 2);
  b.c0 = lstm ? opt_in(6, 4) : &ctx.in(0);
  b.peep = lstm ? opt_in(7, 8) : &ctx.in(0);
  return b;
}

// ---- "steps": CPU-like devices --------------------------------------------------------------

// The input projections of every step as one texel GEMM per direction:
// GX[d] (seq * batch, G * H) = X (seq * batch, I) x W[d]^T (+ Wb[d]), X's rows in its own order.
TexelGemm input_projection(int64_t rows, int64_t gh, int64_t input_size, int64_t dirs, bool bias) {
  TexelGemm g;
  g.M = rows, g.N = gh, g.K = input_size, g.ldb = input_size / 4, g.b_t = true;
  g.alpha = 1, g.beta = bias ? 1 : 0, g.scm = 0, g.scn = 1;
  g.offsets.clear();
  for (int64_t d = 0; d < dirs; ++d)
    g.offsets.insert(g.offsets.end(), {0, static_cast<int32_t>(d * gh * input_size), static_cast<int32_t>(d * 2 * gh),
                                       static_cast<int32_t>(d * rows * gh)});
  return g;
}

// "persistent": a step of more multiply-adds per sequence (G x H x H) than this runs on
// "steps", spread over the device: one workgroup is one lavapipe thread, and past about this
// the thread's step costs more than a dispatch's hand-off to the pool. Measured (seq 64,
// vulkan:0, persistent against steps): LSTM H 64 1.1 against 2.6-3.7 ms, H 128 (65,536) 2.7-3.8
// against 5.1-5.6, GRU H 128 even to 1.1x faster; LSTM H 256 even at batch 1 and slower at
// batch 4 (23 against 18 ms).
constexpr int64_t kPersistentStepMacs = int64_t{1} << 16;

// Loop iterations of one rnn_step.comp invocation per time step: the k loop (H / 4 passes of
// 4 x G texels), then 4 units of G gates each, Y's row.
uint64_t rnn_step_loops(int gates, int64_t hidden) {
  return static_cast<uint64_t>(hidden / 4 + 1) * (5 + 4 * (gates + 1)) + 4 * (2 * gates + 3) + 16;
}

template <int Gates>
void rnn_steps_run(KernelContext& ctx, bool persistent) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1), &r = ctx.in(2);
  const bool batch_major = ctx.attrs->get_int("layout", 0) != 0;
  const int64_t seq = x.dim(batch_major ? 1 : 0), batch = x.dim(batch_major ? 0 : 1), input_size = x.dim(2),
                hidden = r.dim(2), dirs = w.dim(0), gh = Gates * hidden;
  std::vector<int32_t> lens = sequence_lengths(ctx, seq, batch);
  const Tensor* outs[3] = {output_if(ctx, 0), output_if(ctx, 1), Gates == 4 ? output_if(ctx, 2) : nullptr};
  const Tensor* any_out = outs[0] ? outs[0] : outs[1] ? outs[1] : outs[2];
  if (!any_out) return;
  const bool bias = ctx.has_input(3);
  Tensor gx = Tensor::empty({dirs * seq * batch * gh}, DType::f32, ctx.device);
  launch_texel_gemm(ctx, input_projection(seq * batch, gh, input_size, dirs, bias), x, w, bias ? &ctx.in(3) : nullptr,
                    gx);
  const RnnBindings rb = rnn_bindings(ctx, lens, batch_major, Gates == 4);
  uint32_t flags = rb.flags;
  std::vector<Arg> inputs = {input(gx), input(*rb.bias), input(rb.lens), input(*rb.peep), input(*rb.h0), input(*rb.c0)};
  for (int k = 0; k < 3; ++k)
    if (outs[k]) flags |= 16u << k;
  // Two state buffers, each dispatch reading one and writing the other.
  Tensor state[2] = {Tensor::empty({dirs * batch * 2 * hidden}, DType::f32, ctx.device),
                     Tensor::empty({dirs * batch * 2 * hidden}, DType::f32, ctx.device)};
  // RT [dirs, H, G * H]: R with its last two axes swapped, so a step reads one vec4 texel of
  // 4 units per (k, gate). Geometry -1 tells it apart from the GEMM's padded copies.
  Tensor rt = derive_input(ctx, 2, {-1, dirs, gh, hidden, 0}, [&] {
    Tensor t = Tensor::empty({dirs, hidden, gh}, DType::f32, ctx.device);
    CopyPlan plan;
    plan.axis(dirs, gh * hidden, hidden * gh);
    plan.axis(hidden, 1, gh);
    plan.axis(gh, hidden, 1);
    run_copy(ctx, r, t, std::move(plan));
    return t;
  });
  const uint64_t quads = static_cast<uint64_t>(dirs * batch * hidden / 4);
  // "persistent": steps per dispatch within the loop cap (its supports checked one fits).
  const uint64_t per_step = rnn_step_loops(Gates, hidden) + 3, limit = loop_limit(ctx);
  const int64_t chunk =
      !persistent ? 1 : limit == UINT64_MAX ? seq : static_cast<int64_t>(std::max<uint64_t>(1, (limit - 8) / per_step));
  int k = 0;  // dispatches so far: the state buffer read is state[k % 2 == 0 ? 1 : 0]
  for (int64_t s = -1; s < seq; s = s < 0 ? 0 : s + chunk, ++k) {  // -1: load the initial state
    Launch l;
    l.shader = "rnn_step";
    const bool run = s >= 0;
    const int64_t end = std::min(seq, s + chunk);
    l.spec = {Gates, !run ? 1 : persistent ? 2 : 0, persistent ? static_cast<int32_t>(hidden / 4) : 1};
    // "steps": workgroups of 16 invocations (a batch-1 step of 256 units is 4 of them, for
    // every core); "persistent": one workgroup of H / 4 per sequence.
    l.local_size = run && persistent ? static_cast<uint32_t>(hidden / 4) : 16;
    const Tensor& in = state[k % 2 == 0 ? 1 : 0];
    Tensor& out = state[k % 2 == 0 ? 0 : 1];
    l.args = {texels(rt), texels(in)};
    l.args.insert(l.args.end(), inputs.begin(), inputs.end());
    l.args.push_back(output(out));
    for (int o = 0; o < 3; ++o) l.args.push_back(output(outs[o] ? *outs[o] : *any_out));
    for (int64_t v : {seq, batch, hidden, dirs}) l.push_u(v);
    l.push_u(flags);
    l.push_u(rb.reverse_mask);
    l.push_f(ctx.attrs->has("clip") ? ctx.attrs->get_float("clip") : INFINITY);
    l.push_u(run ? s : 0);
    l.push_u(run ? end : 0);
    set_grid(l, device_caps(ctx), run && persistent ? static_cast<uint64_t>(dirs * batch) : (quads + 15) / 16);
    launch(ctx, std::move(l));
  }
}

template <int Gates>
void rnn_steps(KernelContext& ctx) {
  rnn_steps_run<Gates>(ctx, false);
}
template <int Gates>
void rnn_persistent(KernelContext& ctx) {
  rnn_steps_run<Gates>(ctx, true);
}

std::string rnn_steps_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the per-sequence kernel"); !why.empty()) return why;
  if (x.dtype() != DType::f32) return "not f32 (the state and projections are f32 scratch)";
  if (x.rank() != 3 || ctx.in(1).rank() != 3 || ctx.in(2).rank() != 3) return "inputs of unexpected rank";
  for (const Tensor& t : ctx.inputs)
    if (t.defined() && t.dtype() != x.dtype() && &t != &ctx.inputs[4]) return "operands of different dtypes";
  const bool batch_major = ctx.attrs->get_int("layout", 0) != 0;
  const int64_t seq = x.dim(batch_major ? 1 : 0), batch = x.dim(batch_major ? 0 : 1), input_size = x.dim(2),
                hidden = ctx.in(2).dim(2), dirs = ctx.in(1).dim(0);
  if (seq == 0 || batch == 0 || hidden == 0 || dirs == 0) return "an empty sequence, batch or state";
  if (hidden % 4 || input_size % 4)
    return str("hidden size ", hidden, " or input size ", input_size, " is not a multiple of 4 (whole texels)");
  if (ctx.op->name == "GRU" && ctx.attrs->get_int("linear_before_reset", 0) == 0)
    return "linear_before_reset = 0 (the candidate needs r of every unit first)";
  const int gates = ctx.op->name == "LSTM" ? 4 : 3;
  for (const char* a : {"activations", "activation_alpha", "activation_beta"})
    if (ctx.attrs->has(a)) return str("the attribute ", a, " (default activations only)");
  const int64_t rows = seq * batch, gh = gates * hidden;
  if (dirs * rows * gh >= (int64_t{1} << 31)) return "the input projections have more than 2^31 elements";
  if (static_cast<uint64_t>(dirs * rows * gh) * 4 > binding_limit(ctx))
    return "the input projections take more than one binding";
  if (auto why = texel_gemm_fits(ctx, input_projection(rows, gh, input_size, dirs, ctx.has_input(3)), x.numel(),
                                 ctx.in(1).numel());
      !why.empty())
    return why;
  if (static_cast<uint64_t>(ctx.in(2).numel() / 4) > device_caps(ctx).max_texels) return "R exceeds maxTexelBufferElements";
  if (auto why = loop_budget_ok(ctx, rnn_step_loops(gates, hidden), str("hidden size ", hidden)); !why.empty())
    return why;
  return fits_bindings(ctx);
}

std::string rnn_persistent_supports(const KernelContext& ctx) {
  if (auto why = rnn_steps_supports(ctx); !why.empty()) return why;
  const Tensor& x = ctx.in(0);
  const bool batch_major = ctx.attrs->get_int("layout", 0) != 0;
  const int64_t sequences = ctx.in(1).dim(0) * x.dim(batch_major ? 0 : 1), hidden = ctx.in(2).dim(2);
  const int gates = ctx.op->name == "LSTM" ? 4 : 3;
  if (gates * hidden * hidden > kPersistentStepMacs)
    return str("steps of ", gates * hidden * hidden, " multiply-adds per sequence (a workgroup runs them on one thread; ",
               "at most ", kPersistentStepMacs, ")");
  const DeviceCaps& caps = device_caps(ctx);
  const auto quads = static_cast<uint64_t>(hidden / 4);
  if (quads > caps.max_workgroup_invocations || quads > caps.max_workgroup_size[0])
    return str("hidden size ", hidden, " needs workgroups of ", quads, " invocations");
  if (static_cast<uint64_t>(hidden) * 4 > caps.shared_memory)
    return str("hidden size ", hidden, " needs ", hidden * 4, " bytes of shared memory; the device has ", caps.shared_memory);
  if (auto why = loop_budget_ok(ctx, rnn_step_loops(gates, hidden) + 3 + 8, str("a time step of hidden size ", hidden));
      !why.empty())
    return why;
  return grid_ok(ctx, static_cast<uint64_t>(sequences), "one workgroup per sequence");
}

// ---- "sequence": any device -----------------------------------------------------------------

template <int Gates>
void rnn_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1), &r = ctx.in(2);
  const bool batch_major = ctx.attrs->get_int("layout", 0) != 0;  // X [batch, seq, input]
  int64_t seq = x.dim(batch_major ? 1 : 0), batch = x.dim(batch_major ? 0 : 1), input_size = x.dim(2),
          hidden = r.dim(2), dirs = w.dim(0);
  std::vector<int32_t> lens = sequence_lengths(ctx, seq, batch);
  const Tensor* outs[3] = {output_if(ctx, 0), output_if(ctx, 1), Gates == 4 ? output_if(ctx, 2) : nullptr};
  const Tensor* any_out = outs[0] ? outs[0] : outs[1] ? outs[1] : outs[2];
  if (!any_out || batch == 0 || dirs == 0) {
    for (const Tensor* o : outs)
      if (o && o->numel()) throw BackendError(str("[", ctx.op->name, "] non-empty output with an empty batch"));
    return;
  }
  const RnnBindings rb = rnn_bindings(ctx, lens, batch_major, Gates == 4);
  uint32_t flags = rb.flags, reverse_mask = rb.reverse_mask;
  Launch l;
  l.shader = "rnn";
  l.variant = variant_for(x.dtype());
  l.spec = {Gates, 0, ctx.attrs->get_int("linear_before_reset", 0) ? 1 : 0, static_cast<int32_t>(hidden)};
  l.args = {input(x), input(w), input(r), input(*rb.bias), input(rb.lens), input(*rb.h0), input(*rb.c0),
            input(*rb.peep)};
  for (int k = 0; k < 3; ++k) {
    if (outs[k]) flags |= 16u << k;
    l.args.push_back(output(outs[k] ? *outs[k] : *any_out));
  }
  l.push_u(seq);
  l.push_u(batch);
  l.push_u(input_size);
  l.push_u(dirs);
  l.push_u(flags);
  l.push_u(reverse_mask);
  double clip = ctx.attrs->has("clip") ? ctx.attrs->get_float("clip") : INFINITY;
  l.push_f(clip);
  l.groups[0] = static_cast<uint32_t>(dirs * batch);
  l.local_size = kLocalSize;
  int64_t chunk = rnn_steps_per_dispatch(ctx, Gates, hidden, input_size);
  if (chunk < 1) throw BackendError(str("[", ctx.op->name, "] one step exceeds the loop cap (supports should decline)"));
  // h and c of every sequence between dispatches (unused when one dispatch runs all the steps)
  Tensor carried = Tensor::empty({dirs * batch * 2 * hidden}, DType::f32, ctx.device);
  l.args.push_back(output(carried));
  for (int64_t begin = 0; begin < seq || begin == 0; begin += chunk) {
    int64_t end = std::min(seq, begin + chunk);
    Launch step = l;
    step.push_u(begin);
    step.push_u(end);
    launch(ctx, std::move(step));
    if (end >= seq) break;
  }
}

std::string rnn_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = fp16_ok(ctx, x.dtype()); !why.empty()) return why;
  if (x.rank() != 3 || ctx.in(2).rank() != 3) return "inputs of unexpected rank";
  int64_t hidden = ctx.in(2).dim(2);
  if (hidden < 1) return "hidden size 0";
  const DeviceCaps& caps = device_caps(ctx);
  if (static_cast<uint64_t>(hidden) * 11 * 4 > caps.shared_memory)
    return str("hidden size ", hidden, " needs more shared memory than the device's ", caps.shared_memory, " bytes");
  int gates = ctx.op->name == "LSTM" ? 4 : 3;
  if (rnn_steps_per_dispatch(ctx, gates, hidden, x.dim(2)) < 1)
    return loop_budget_ok(ctx, rnn_loops(gates, hidden, x.dim(2)).per_step + rnn_loops(gates, hidden, x.dim(2)).per_dispatch,
                          str("one time step (hidden ", hidden, ", input ", x.dim(2), ")"));
  int64_t groups = ctx.in(1).dim(0) * x.dim(ctx.attrs->get_int("layout", 0) != 0 ? 0 : 1);
  if (groups > caps.max_groups[0]) return "more sequences than one dispatch's workgroups";
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(LSTM, vulkan, kF32, rnn_persistent<4>, rnn_persistent_supports, (KernelImpl{"persistent", 2}))
PORTA_REGISTER_KERNEL(LSTM, vulkan, kF32, rnn_steps<4>, rnn_steps_supports, (KernelImpl{"steps", 1}))
PORTA_REGISTER_KERNEL(LSTM, vulkan, kF32 | kF16, rnn_vulkan<4>, rnn_supports, (KernelImpl{"sequence", 0}))
PORTA_REGISTER_KERNEL(GRU, vulkan, kF32, rnn_persistent<3>, rnn_persistent_supports, (KernelImpl{"persistent", 2}))
PORTA_REGISTER_KERNEL(GRU, vulkan, kF32, rnn_steps<3>, rnn_steps_supports, (KernelImpl{"steps", 1}))
PORTA_REGISTER_KERNEL(GRU, vulkan, kF32 | kF16, rnn_vulkan<3>, rnn_supports, (KernelImpl{"sequence", 0}))

}  // namespace porta::vk
