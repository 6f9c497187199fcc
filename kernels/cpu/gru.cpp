// GRU on cpu (f32, f64): all input projections in one product up front, then the time steps
// on a team of threads that each own a range of hidden units (rnn_common.hpp), over R packed by
// blocks (made once per session for a constant R). linear_before_reset 1 (PyTorch's GRU)
// multiplies the reset gate after the recurrent product, so z, r and the candidate's product
// all read h: one pass over a thread's blocks and one barrier per step. linear_before_reset 0
// multiplies it before: the candidate's product reads r * h of every unit, so a step has two
// phases (z and r, then the candidate) with a barrier after each. In a bf16 session the
// products read bf16 weights and sum in f32, as LSTM's (lstm.cpp); gates and h stay f32.
#include <type_traits>

#include "kernels/cpu/rnn_common.hpp"
#include "ops/rnn_util.hpp"

namespace porta::cpu {
namespace {

// W: the packed recurrent weights' type: T, or uint16_t (bf16) for a call computing in bf16,
// whose input projection then runs in bf16 too (f32 accumulation, f32 gates and state).
template <typename T, typename W = T>
void gru_typed(KernelContext& ctx) {
  opdef::RnnDims n = opdef::rnn_dims(ctx);
  std::vector<int64_t> lens = opdef::rnn_lengths(ctx, n);
  double clip = opdef::rnn_clip(*ctx.attrs);
  bool lbr = ctx.attrs->get_int("linear_before_reset") != 0;
  const int64_t H = n.hidden, I = n.input, G = 3 * H, N = n.batch, S = n.seq;
  const T* X = ctx.in(0).data<T>();
  const T *B = optional_input<T>(ctx, 3), *H0 = optional_input<T>(ctx, 5);
  T *Y = optional_output<T>(ctx, 0), *Yh = optional_output<T>(ctx, 1);
  if (Y) std::fill_n(Y, ctx.out(0).numel(), T(0));  // steps past a sequence length stay 0
  if (H == 0 || N == 0) return;
  std::shared_ptr<const RnnPacked<W>> packed = packed_recurrent<W>(ctx, 3);
  const int64_t NB = packed->blocks, Hp = NB * kRnnBlock, row = 3 * kRnnBlock;
  const int threads = rnn_step_threads(NB, N * G * H);
  const int64_t chunk = N > 1 ? 64 : H;  // rows of a block each entry reuses from L1 (see lstm.cpp)
  std::vector<T> xw(static_cast<size_t>(S * N * G));
  // h: this step's and the next; rh: r * h (linear_before_reset 0); z: per thread and entry,
  // its units of the gates z, r and the candidate's product.
  AlignedArray<T> hbuf(2 * N * Hp), rh(lbr ? 0 : N * Hp), zbuf(threads * N * 3 * Hp);
  constexpr bool bf16 = std::is_same_v<W, uint16_t>;
  AlignedArray<uint32_t> h2buf(bf16 ? threads * N * Hp / 2 : 0);  // per thread: the product's h as bf16 pairs
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = opdef::rnn_reverse(*ctx.attrs, d);
    const T* Rb = B ? B + d * 2 * G + G : nullptr;
    if constexpr (std::is_same_v<W, uint16_t>)
      project_input_bf16(ctx, d, X, B ? B + d * 2 * G : nullptr, nullptr, S * N, I, G, xw.data());
    else
      project_input(ctx, d, X, B ? B + d * 2 * G : nullptr, static_cast<const T*>(nullptr), S * N, I, G, xw.data());
    for (int64_t b = 0; b < N; ++b)
      for (int64_t j = 0; j < H; ++j) hbuf.data()[b * Hp + j] = H0 ? H0[n.state_offset(d, b) + j] : T(0);
    // Phase 0: the product of h with the gates z, r (and with linear_before_reset the
    // candidate's), then z and r. Phase 1 (linear_before_reset 0 only): the candidate's product
    // of r * h. The last phase updates h.
    run_steps(threads, S, lbr ? 1 : 2, [&](int th, int nt, int64_t step, int phase) {
      auto [b0, b1] = rnn_block_range(NB, th, nt);
      const int64_t u0 = b0 * kRnnBlock, U = std::min(b1 * kRnnBlock, H) - u0, Up = (b1 - b0) * kRnnBlock;
      if (U <= 0) return;
      const T* hcur = hbuf.data() + (step & 1) * N * Hp;
      T* hnext = hbuf.data() + ((step + 1) & 1) * N * Hp;
      T* z = zbuf.data() + th * N * 3 * Hp;  // per entry: this thread's units of the 3 gates
      auto active = [&](int64_t b) { return step < lens[b]; };
      auto time_of = [&](int64_t b) { return reverse ? lens[b] - 1 - step : step; };
      // z[b] gates q0 .. q0+nq-1 += src[b] . R^T for this thread's units.
      auto product = [&](const T* src, int q0, int nq) {
        for (int64_t b = 0; b < N; ++b)
          if (active(b)) std::fill_n(z + (b * 3 + q0) * Up, nq * Up, T(0));
        uint32_t* h2 = bf16 ? h2buf.data() + th * N * Hp / 2 : nullptr;
        if constexpr (bf16)
          for (int64_t b = 0; b < N; ++b) to_bf16_pairs(src + b * Hp, Hp, h2 + b * Hp / 2);
        for (int64_t blk = b0; blk < b1; ++blk) {
          const W* wb = packed->block(d, blk) + q0 * kRnnBlock * (bf16 ? 2 : 1);
          for (int64_t k0 = 0; k0 < H; k0 += chunk)
            for (int64_t b = 0; b < N; ++b)
              if (active(b)) {
                if constexpr (bf16)
                  accumulate_block_bf16(h2 + (b * Hp + k0) / 2, wb + k0 * row, (std::min(chunk, H - k0) + 1) / 2,
                                        2 * row, nq, z + (b * 3 + q0) * Up + (blk - b0) * kRnnBlock, Up);
                else
                  accumulate_block(src + b * Hp + k0, wb + k0 * row, std::min(chunk, H - k0), row, nq,
                                   z + (b * 3 + q0) * Up + (blk - b0) * kRnnBlock, Up);
              }
        }
      };
      if (phase == 0) {
        product(hcur, 0, lbr ? 3 : 2);
        for (int64_t b = 0; b < N; ++b) {
          if (!active(b)) continue;
          const T* xb = xw.data() + n.x_row(time_of(b), b) * G + u0;
          T *zz = z + b * 3 * Up, *zr = zz + Up;
          for (int64_t j = 0; j < U; ++j) {
            zz[j] = xb[j] + zz[j] + (Rb ? Rb[u0 + j] : T(0));
            zr[j] = xb[H + j] + zr[j] + (Rb ? Rb[H + u0 + j] : T(0));
          }
          sigmoid_run(zz, U, clip);
          sigmoid_run(zr, U, clip);
          if (!lbr)
            for (int64_t j = 0; j < U; ++j) rh.data()[b * Hp + u0 + j] = zr[j] * hcur[b * Hp + u0 + j];
        }
        if (!lbr) return;  // the candidate waits for every unit's r * h
      } else {
        product(rh.data(), 2, 1);
      }
      for (int64_t b = 0; b < N; ++b) {
        const T* hb = hcur + b * Hp + u0;
        T* hn = hnext + b * Hp + u0;
        if (!active(b)) {  // finished: its state stays
          std::copy_n(hb, U, hn);
          continue;
        }
        int64_t t = time_of(b);
        const T* xb = xw.data() + n.x_row(t, b) * G + u0;
        // pre: the candidate's product, then its pre-activation, then its activation.
        T *zz = z + b * 3 * Up, *zr = zz + Up, *pre = zz + 2 * Up;
        for (int64_t j = 0; j < U; ++j) {
          T rbh = Rb ? Rb[2 * H + u0 + j] : T(0);
          pre[j] = lbr ? xb[2 * H + j] + zr[j] * (pre[j] + rbh) : xb[2 * H + j] + pre[j] + rbh;
        }
        tanh_run(pre, U, clip);
        for (int64_t j = 0; j < U; ++j) hn[j] = (T(1) - zz[j]) * pre[j] + zz[j] * hb[j];
        if (Y) std::copy_n(hn, U, Y + n.y_offset(t, d, b) + u0);
      }
    });
    if (Yh) {
      const T* h = hbuf.data() + (S & 1) * N * Hp;  // the state after the last step
      for (int64_t b = 0; b < N; ++b) std::copy_n(h + b * Hp, H, Yh + n.state_offset(d, b));
    }
  }
}

void gru_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f64) gru_typed<double>(ctx);
  else if (compute_format(ctx) == DType::bf16 && rnn_bf16_supported()) gru_typed<float, uint16_t>(ctx);
  else gru_typed<float>(ctx);
}

const bool gru_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "GRU";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32 | kF64;
  k.computes_in = kBF16;  // the products in bf16 (f32 sums); gates and hidden state f32
  k.fn = gru_cpu;
  return k;
}());

}  // namespace

}  // namespace porta::cpu
