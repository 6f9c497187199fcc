// LSTM on cpu (f32, f64): all input projections in one product, then per step one
// recurrent product for the whole batch and the gate update per batch entry. Own loops rather than oneDNN's
// lstm_forward: that primitive has no sequence_lens and orders gates ifco, not ONNX's iofc.
#include "kernels/cpu/rnn_common.hpp"
#include "ops/rnn_util.hpp"

namespace porta::cpu {
namespace {

template <typename T>
void lstm_typed(KernelContext& ctx) {
  opdef::RnnDims n = opdef::rnn_dims(ctx);
  std::vector<int64_t> lens = opdef::rnn_lengths(ctx, n);
  double clip = opdef::rnn_clip(*ctx.attrs);
  const int64_t H = n.hidden, I = n.input, G = 4 * H, N = n.batch, S = n.seq;
  const T *X = ctx.in(0).data<T>(), *W = ctx.in(1).data<T>(), *R = ctx.in(2).data<T>();
  const T *B = optional_input<T>(ctx, 3), *H0 = optional_input<T>(ctx, 5), *C0 = optional_input<T>(ctx, 6),
          *P = optional_input<T>(ctx, 7);
  T *Y = optional_output<T>(ctx, 0), *Yh = optional_output<T>(ctx, 1), *Yc = optional_output<T>(ctx, 2);
  if (Y) std::fill_n(Y, ctx.out(0).numel(), T(0));  // steps past a sequence length stay 0
  std::vector<T> xw(static_cast<size_t>(S * N * G)), hr(static_cast<size_t>(N * G));
  std::vector<T> h(static_cast<size_t>(N * H)), c(h.size());
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = opdef::rnn_reverse(*ctx.attrs, d);
    const T *Wd = W + d * G * I, *Rd = R + d * G * H;
    const T *Pd = P ? P + d * 3 * H : nullptr;
    project(X, Wd, B ? B + d * 2 * G : nullptr, B ? B + d * 2 * G + G : nullptr, S * N, I, G, xw.data());
    for (int64_t i = 0; i < N * H; ++i) {
      h[i] = H0 ? H0[d * N * H + i] : T(0);
      c[i] = C0 ? C0[d * N * H + i] : T(0);
    }
    for (int64_t step = 0; step < S; ++step) {
      // Recurrent products of every batch entry at once; entries past their length ignore theirs.
      gemm_abt(h.data(), Rd, hr.data(), N, G, H);
      parallel_for(N, std::max<int64_t>(1, 4096 / std::max<int64_t>(G, 1)), [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          if (step >= lens[b]) continue;
          int64_t t = reverse ? lens[b] - 1 - step : step;
          T *hb = h.data() + b * H, *cb = c.data() + b * H;
          const T *xb = xw.data() + (t * N + b) * G, *g = hr.data() + b * G;
          for (int64_t j = 0; j < H; ++j) {
            T i_gate = sigmoid(clip_to(xb[j] + g[j] + (Pd ? Pd[j] * cb[j] : T(0)), clip));
            T f_gate = sigmoid(clip_to(xb[2 * H + j] + g[2 * H + j] + (Pd ? Pd[2 * H + j] * cb[j] : T(0)), clip));
            T cand = std::tanh(clip_to(xb[3 * H + j] + g[3 * H + j], clip));
            cb[j] = f_gate * cb[j] + i_gate * cand;
            T o_gate = sigmoid(clip_to(xb[H + j] + g[H + j] + (Pd ? Pd[H + j] * cb[j] : T(0)), clip));
            hb[j] = o_gate * std::tanh(cb[j]);
          }
          if (Y) std::copy_n(hb, H, Y + ((t * n.directions + d) * N + b) * H);
        }
      });
    }
    if (Yh) std::copy(h.begin(), h.end(), Yh + d * N * H);
    if (Yc) std::copy(c.begin(), c.end(), Yc + d * N * H);
  }
}

void lstm_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f64) lstm_typed<double>(ctx);
  else lstm_typed<float>(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(LSTM, cpu, kF32 | kF64, lstm_cpu)

}  // namespace porta::cpu
