// GRU on cpu (f32, f64): all input projections in one product, then per step two batched
// recurrent products (z and r, then the candidate's) around per-entry gate updates. linear_before_reset 1 multiplies the
// reset gate after the recurrent product (PyTorch's GRU), 0 before it.
#include "kernels/cpu/rnn_common.hpp"
#include "ops/rnn_util.hpp"

namespace porta::cpu {
namespace {

template <typename T>
void gru_typed(KernelContext& ctx) {
  opdef::RnnDims n = opdef::rnn_dims(ctx);
  std::vector<int64_t> lens = opdef::rnn_lengths(ctx, n);
  double clip = opdef::rnn_clip(*ctx.attrs);
  bool lbr = ctx.attrs->get_int("linear_before_reset") != 0;
  const int64_t H = n.hidden, I = n.input, G = 3 * H, N = n.batch, S = n.seq;
  const T *X = ctx.in(0).data<T>(), *W = ctx.in(1).data<T>(), *R = ctx.in(2).data<T>();
  const T *B = optional_input<T>(ctx, 3), *H0 = optional_input<T>(ctx, 5);
  T *Y = optional_output<T>(ctx, 0), *Yh = optional_output<T>(ctx, 1);
  if (Y) std::fill_n(Y, ctx.out(0).numel(), T(0));  // steps past a sequence length stay 0
  std::vector<T> xw(static_cast<size_t>(S * N * G)), h(static_cast<size_t>(N * H));
  std::vector<T> zr(static_cast<size_t>(N * 2 * H)), rh(h.size()), hc(h.size());
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = opdef::rnn_reverse(*ctx.attrs, d);
    const T *Wd = W + d * G * I, *Rd = R + d * G * H;
    const T* Rb = B ? B + d * 2 * G + G : nullptr;
    project(X, Wd, B ? B + d * 2 * G : nullptr, static_cast<const T*>(nullptr), S * N, I, G, xw.data());
    for (int64_t b = 0; b < N; ++b)
      for (int64_t j = 0; j < H; ++j) h[b * H + j] = H0 ? H0[n.state_offset(d, b) + j] : T(0);
    const T* Rh = Rd + 2 * H * H;  // rows of the candidate gate
    for (int64_t step = 0; step < S; ++step) {
      // z and r for the whole batch; entries past their length are computed and ignored.
      gemm_abt(h.data(), Rd, zr.data(), N, 2 * H, H);
      auto active = [&](int64_t b) { return step < lens[b]; };
      auto time_of = [&](int64_t b) { return reverse ? lens[b] - 1 - step : step; };
      for (int64_t b = 0; b < N; ++b) {
        if (!active(b)) continue;
        const T* xb = xw.data() + n.x_row(time_of(b), b) * G;
        T* zrb = zr.data() + b * 2 * H;
        for (int64_t r = 0; r < 2 * H; ++r) zrb[r] = sigmoid(clip_to(xb[r] + zrb[r] + (Rb ? Rb[r] : T(0)), clip));
        if (!lbr)
          for (int64_t j = 0; j < H; ++j) rh[b * H + j] = zrb[H + j] * h[b * H + j];
      }
      // Candidate's recurrent product: of h (linear_before_reset) or of r * h.
      gemm_abt(lbr ? h.data() : rh.data(), Rh, hc.data(), N, H, H);
      for (int64_t b = 0; b < N; ++b) {
        if (!active(b)) continue;
        int64_t t = time_of(b);
        const T* xb = xw.data() + n.x_row(t, b) * G;
        const T *z = zr.data() + b * 2 * H, *rg = z + H, *hcb = hc.data() + b * H;
        T* hb = h.data() + b * H;
        for (int64_t j = 0; j < H; ++j) {
          T rbh = Rb ? Rb[2 * H + j] : T(0);
          T pre = lbr ? xb[2 * H + j] + rg[j] * (hcb[j] + rbh) : xb[2 * H + j] + hcb[j] + rbh;
          hb[j] = (T(1) - z[j]) * std::tanh(clip_to(pre, clip)) + z[j] * hb[j];
        }
        if (Y) std::copy_n(hb, H, Y + n.y_offset(t, d, b));
      }
    }
    if (Yh)
      for (int64_t b = 0; b < N; ++b) std::copy_n(h.data() + b * H, H, Yh + n.state_offset(d, b));
  }
}

void gru_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f64) gru_typed<double>(ctx);
  else gru_typed<float>(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(GRU, cpu, kF32 | kF64, gru_cpu)

}  // namespace porta::cpu
