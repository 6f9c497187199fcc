// GRU on cpu (f32, f64): all input projections in one product, then per step and batch
// entry the recurrent products and the gate update. linear_before_reset 1 multiplies the
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
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = opdef::rnn_reverse(*ctx.attrs, d);
    const T *Wd = W + d * G * I, *Rd = R + d * G * H;
    const T* Rb = B ? B + d * 2 * G + G : nullptr;
    project(X, Wd, B ? B + d * 2 * G : nullptr, static_cast<const T*>(nullptr), S * N, I, G, xw.data());
    for (int64_t i = 0; i < N * H; ++i) h[i] = H0 ? H0[d * N * H + i] : T(0);
    for (int64_t step = 0; step < S; ++step) {
      parallel_for(N, std::max<int64_t>(1, 4096 / std::max<int64_t>(G * H, 1)), [&](int64_t b0, int64_t b1) {
        std::vector<T> zr(static_cast<size_t>(2 * H)), rh(static_cast<size_t>(H)), next(static_cast<size_t>(H));
        for (int64_t b = b0; b < b1; ++b) {
          if (step >= lens[b]) continue;
          int64_t t = reverse ? lens[b] - 1 - step : step;
          T* hb = h.data() + b * H;
          const T* xb = xw.data() + (t * N + b) * G;
          for (int64_t r = 0; r < 2 * H; ++r)
            zr[r] = sigmoid(clip_to(xb[r] + dot(hb, Rd + r * H, H) + (Rb ? Rb[r] : T(0)), clip));
          const T* z = zr.data();
          const T* rg = zr.data() + H;
          if (!lbr)
            for (int64_t j = 0; j < H; ++j) rh[j] = rg[j] * hb[j];
          for (int64_t j = 0; j < H; ++j) {
            const T* Rh = Rd + (2 * H + j) * H;
            T rbh = Rb ? Rb[2 * H + j] : T(0);
            T pre = lbr ? xb[2 * H + j] + rg[j] * (dot(hb, Rh, H) + rbh) : xb[2 * H + j] + dot(rh.data(), Rh, H) + rbh;
            next[j] = (T(1) - z[j]) * std::tanh(clip_to(pre, clip)) + z[j] * hb[j];
          }
          std::copy(next.begin(), next.end(), hb);
          if (Y) std::copy_n(hb, H, Y + ((t * n.directions + d) * N + b) * H);
        }
      });
    }
    if (Yh) std::copy(h.begin(), h.end(), Yh + d * N * H);
  }
}

void gru_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f64) gru_typed<double>(ctx);
  else gru_typed<float>(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(GRU, cpu, kF32 | kF64, gru_cpu)

}  // namespace porta::cpu
