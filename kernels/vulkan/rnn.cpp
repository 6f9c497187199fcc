// LSTM and GRU on vulkan (layouts 0 and 1): rnn.comp, each workgroup runs one (direction, batch
// entry) sequence. The steps are split over as few dispatches as the driver's loop cap allows
// (one where it has none); h and c pass between them through a scratch buffer. Sequence lengths
// are checked on the host (a length outside [0, seq] is a ShapeError) and passed as int32.
#include <algorithm>
#include <cmath>

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

template <int Gates>
void rnn_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1), &r = ctx.in(2);
  const bool batch_major = ctx.attrs->get_int("layout", 0) != 0;  // X [batch, seq, input]
  int64_t seq = x.dim(batch_major ? 1 : 0), batch = x.dim(batch_major ? 0 : 1), input_size = x.dim(2),
          hidden = r.dim(2), dirs = w.dim(0);
  std::vector<int32_t> lens(static_cast<size_t>(batch), static_cast<int32_t>(seq));
  if (ctx.has_input(4)) {
    std::vector<double> given = ctx.in(4).to_doubles();
    for (size_t b = 0; b < lens.size(); ++b) {
      if (given.at(b) < 0 || given[b] > static_cast<double>(seq))
        throw ShapeError(str("[", ctx.op->name, "] expected sequence_lens in [0, ", seq, "], got ", given[b],
                             " for batch ", b));
      lens[b] = static_cast<int32_t>(given[b]);
    }
  }
  const Tensor* outs[3] = {output_if(ctx, 0), output_if(ctx, 1), Gates == 4 ? output_if(ctx, 2) : nullptr};
  const Tensor* any_out = outs[0] ? outs[0] : outs[1] ? outs[1] : outs[2];
  if (!any_out || batch == 0 || dirs == 0) {
    for (const Tensor* o : outs)
      if (o && o->numel()) throw BackendError(str("[", ctx.op->name, "] non-empty output with an empty batch"));
    return;
  }
  Tensor dev_lens = Tensor::from_host(lens.data(), {batch}, DType::i32, ctx.device);
  std::string dir = ctx.attrs->get_string("direction", "forward");
  uint32_t reverse_mask = dir == "reverse" ? 1u : dir == "bidirectional" ? 2u : 0u;
  uint32_t flags = batch_major ? 128u : 0u;
  auto opt_in = [&](size_t i, uint32_t bit) -> const Tensor& {
    if (ctx.has_input(i)) {
      flags |= bit;
      return ctx.in(i);
    }
    return x;
  };
  Launch l;
  l.shader = "rnn";
  l.variant = variant_for(x.dtype());
  l.spec = {Gates, 0, ctx.attrs->get_int("linear_before_reset", 0) ? 1 : 0, static_cast<int32_t>(hidden)};
  l.args = {input(x), input(w), input(r), input(opt_in(3, 1)), input(dev_lens), input(opt_in(5, 2)),
            input(Gates == 4 ? opt_in(6, 4) : x), input(Gates == 4 ? opt_in(7, 8) : x)};
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

PORTA_REGISTER_KERNEL(LSTM, vulkan, kF32 | kF16, rnn_vulkan<4>, rnn_supports)
PORTA_REGISTER_KERNEL(GRU, vulkan, kF32 | kF16, rnn_vulkan<3>, rnn_supports)

}  // namespace porta::vk
