// LSTM on cpu (f32, f64): all input projections in one product up front, then the time steps
// on a team of threads that each own a range of hidden units (rnn_common.hpp): per step and
// batch entry a thread accumulates its units' four gate pre-activations from h . R^T over R
// packed by blocks (made once per session for a constant R), adds the projections and
// peepholes, and runs the vectorized gate update on its units; one barrier per step publishes
// the new h. Own loops rather than oneDNN's lstm_forward: that primitive has no sequence_lens
// and orders gates ifco, not ONNX's iofc. A per-step oneDNN matmul for the recurrent product
// (batch x 4H x H, tiny) cost more in call overhead than its arithmetic. In a bf16 session
// (porta_compute 16) both products read bf16 weights (R packed in bf16, W in oneDNN's bf16
// layout, X rounded per call) and sum in f32; the gates, the cell and h stay f32.
#include <limits>
#include <type_traits>

#include "kernels/cpu/rnn_common.hpp"
#include "ops/rnn_util.hpp"

namespace porta::cpu {
namespace {

// W: the packed recurrent weights' type: T, or uint16_t (bf16) for a call computing in bf16,
// whose input projection then runs in bf16 too (f32 accumulation, f32 gates and state).
template <typename T, typename W = T>
void lstm_typed(KernelContext& ctx) {
  opdef::RnnDims n = opdef::rnn_dims(ctx);
  std::vector<int64_t> lens = opdef::rnn_lengths(ctx, n);
  double clip = opdef::rnn_clip(*ctx.attrs);
  const int64_t H = n.hidden, I = n.input, G = 4 * H, N = n.batch, S = n.seq;
  const T* X = ctx.in(0).data<T>();
  const T *B = optional_input<T>(ctx, 3), *H0 = optional_input<T>(ctx, 5), *C0 = optional_input<T>(ctx, 6),
          *P = optional_input<T>(ctx, 7);
  T *Y = optional_output<T>(ctx, 0), *Yh = optional_output<T>(ctx, 1), *Yc = optional_output<T>(ctx, 2);
  if (Y) std::fill_n(Y, ctx.out(0).numel(), T(0));  // steps past a sequence length stay 0
  if (H == 0 || N == 0) return;
  std::shared_ptr<const RnnPacked<W>> packed = packed_recurrent<W>(ctx, 4);
  const int64_t NB = packed->blocks, Hp = NB * kRnnBlock, row = 4 * kRnnBlock;
  const int threads = rnn_step_threads(NB, N * G * H);
  // With several batch entries a block is walked in chunks of rows that each entry reuses
  // from L1 (64 rows of 4 gates: 16 KiB of f32).
  const int64_t chunk = N > 1 ? 64 : H;
  std::vector<T> xw(static_cast<size_t>(S * N * G));
  AlignedArray<T> hbuf(2 * N * Hp), c(N * Hp), zbuf(threads * N * 4 * Hp);  // h: this step's and the next
  constexpr bool bf16 = std::is_same_v<W, uint16_t>;
  AlignedArray<uint32_t> h2buf(bf16 ? threads * N * Hp / 2 : 0);  // per thread: h as bf16 pairs
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = opdef::rnn_reverse(*ctx.attrs, d);
    const T* Pd = P ? P + d * 3 * H : nullptr;
    if constexpr (std::is_same_v<W, uint16_t>)
      project_input_bf16(ctx, d, X, B ? B + d * 2 * G : nullptr, B ? B + d * 2 * G + G : nullptr, S * N, I, G, xw.data());
    else
      project_input(ctx, d, X, B ? B + d * 2 * G : nullptr, B ? B + d * 2 * G + G : nullptr, S * N, I, G, xw.data());
    for (int64_t b = 0; b < N; ++b)
      for (int64_t j = 0; j < H; ++j) {
        hbuf.data()[b * Hp + j] = H0 ? H0[n.state_offset(d, b) + j] : T(0);
        c.data()[b * Hp + j] = C0 ? C0[n.state_offset(d, b) + j] : T(0);
      }
    run_steps(threads, S, 1, [&](int th, int nt, int64_t step, int) {
      auto [b0, b1] = rnn_block_range(NB, th, nt);
      const int64_t u0 = b0 * kRnnBlock, U = std::min(b1 * kRnnBlock, H) - u0, Up = (b1 - b0) * kRnnBlock;
      if (U <= 0) return;
      const T* hcur = hbuf.data() + (step & 1) * N * Hp;
      T* hnext = hbuf.data() + ((step + 1) & 1) * N * Hp;
      T* z = zbuf.data() + th * N * 4 * Hp;  // per entry: this thread's units of gates i, o, f, c
      for (int64_t b = 0; b < N; ++b)
        if (step < lens[b]) std::fill_n(z + b * 4 * Up, 4 * Up, T(0));
      // z += h . R^T (the previous step's h) for this thread's units.
      uint32_t* h2 = bf16 ? h2buf.data() + th * N * Hp / 2 : nullptr;
      if constexpr (bf16)
        for (int64_t b = 0; b < N; ++b) to_bf16_pairs(hcur + b * Hp, Hp, h2 + b * Hp / 2);
      for (int64_t blk = b0; blk < b1; ++blk) {
        const W* wb = packed->block(d, blk);
        for (int64_t k0 = 0; k0 < H; k0 += chunk)
          for (int64_t b = 0; b < N; ++b)
            if (step < lens[b]) {
              if constexpr (bf16)
                accumulate_block_bf16(h2 + (b * Hp + k0) / 2, wb + k0 * row, (std::min(chunk, H - k0) + 1) / 2, 2 * row,
                                      4, z + b * 4 * Up + (blk - b0) * kRnnBlock, Up);
              else
                accumulate_block(hcur + b * Hp + k0, wb + k0 * row, std::min(chunk, H - k0), row, 4,
                                 z + b * 4 * Up + (blk - b0) * kRnnBlock, Up);
            }
      }
      for (int64_t b = 0; b < N; ++b) {
        const T* hb = hcur + b * Hp + u0;
        T *hn = hnext + b * Hp + u0, *cb = c.data() + b * Hp + u0;
        if (step >= lens[b]) {  // finished: its state stays
          std::copy_n(hb, U, hn);
          continue;
        }
        int64_t t = reverse ? lens[b] - 1 - step : step;
        const T* xb = xw.data() + n.x_row(t, b) * G + u0;
        T *zi = z + b * 4 * Up, *zo = zi + Up, *zf = zi + 2 * Up, *zc = zi + 3 * Up;
        // Gates in ONNX order i, o, f, c: projections (and peepholes) added, then activated a
        // whole gate at a time (vectorized sigmoid / tanh for f32).
        for (int64_t j = 0; j < U; ++j) {
          zi[j] += xb[j];
          zo[j] += xb[H + j];
          zf[j] += xb[2 * H + j];
          zc[j] += xb[3 * H + j];
        }
        if (Pd)
          for (int64_t j = 0; j < U; ++j) {
            zi[j] += Pd[u0 + j] * cb[j];
            zf[j] += Pd[2 * H + u0 + j] * cb[j];
          }
        sigmoid_run(zi, U, clip);
        sigmoid_run(zf, U, clip);
        tanh_run(zc, U, clip);
        for (int64_t j = 0; j < U; ++j) cb[j] = zf[j] * cb[j] + zi[j] * zc[j];
        if (Pd)
          for (int64_t j = 0; j < U; ++j) zo[j] += Pd[H + u0 + j] * cb[j];  // peephole sees the new cell
        sigmoid_run(zo, U, clip);
        std::copy_n(cb, U, zi);  // tanh of the cell, in gate i's place
        tanh_run(zi, U, std::numeric_limits<double>::infinity());  // no clip on the cell
        for (int64_t j = 0; j < U; ++j) hn[j] = zo[j] * zi[j];
        if (Y) std::copy_n(hn, U, Y + n.y_offset(t, d, b) + u0);
      }
    });
    const T* h = hbuf.data() + (S & 1) * N * Hp;  // the state after the last step
    for (int64_t b = 0; b < N; ++b) {
      if (Yh) std::copy_n(h + b * Hp, H, Yh + n.state_offset(d, b));
      if (Yc) std::copy_n(c.data() + b * Hp, H, Yc + n.state_offset(d, b));
    }
  }
}

void lstm_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f64) lstm_typed<double>(ctx);
  else if (compute_format(ctx) == DType::bf16 && rnn_bf16_supported()) lstm_typed<float, uint16_t>(ctx);
  else lstm_typed<float>(ctx);
}

const bool lstm_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "LSTM";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32 | kF64;
  k.computes_in = kBF16;  // the products in bf16 (f32 sums); gates, cell and hidden state f32
  k.fn = lstm_cpu;
  return k;
}());

}  // namespace

}  // namespace porta::cpu
