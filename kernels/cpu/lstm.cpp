// LSTM on cpu (f32, f64): all input projections in one product up front, then per step and
// batch entry the recurrent product h . R^T accumulated straight into the gate pre-activations
// (R transposed once per direction so the inner loop is a contiguous axpy over all 4H gates),
// then the vectorized gate update. Own loops rather than oneDNN's lstm_forward: that primitive
// has no sequence_lens and orders gates ifco, not ONNX's iofc. A per-step oneDNN matmul for
// the recurrent product (batch x 4H x H, tiny) cost more in call overhead than its arithmetic.
#include <limits>

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
  std::vector<T> xw(static_cast<size_t>(S * N * G)), rt(static_cast<size_t>(H * G));
  std::vector<T> h(static_cast<size_t>(N * H)), c(h.size());
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = opdef::rnn_reverse(*ctx.attrs, d);
    const T *Wd = W + d * G * I, *Rd = R + d * G * H;
    const T *Pd = P ? P + d * 3 * H : nullptr;
    project(X, Wd, B ? B + d * 2 * G : nullptr, B ? B + d * 2 * G + G : nullptr, S * N, I, G, xw.data());
    for (int64_t j = 0; j < G; ++j)  // rt[k, j] = R[j, k]
      for (int64_t k = 0; k < H; ++k) rt[k * G + j] = Rd[j * H + k];
    for (int64_t b = 0; b < N; ++b)
      for (int64_t j = 0; j < H; ++j) {
        h[b * H + j] = H0 ? H0[n.state_offset(d, b) + j] : T(0);
        c[b * H + j] = C0 ? C0[n.state_offset(d, b) + j] : T(0);
      }
    for (int64_t step = 0; step < S; ++step) {
      // Gates of one batch entry, ONNX order i, o, f, c: pre-activations summed into z, then
      // activated a whole gate at a time (vectorized sigmoid / tanh for f32).
      parallel_for(N, std::max<int64_t>(1, 4096 / std::max<int64_t>(G, 1)), [&](int64_t b0, int64_t b1) {
        std::vector<T> z(static_cast<size_t>(G)), tc(static_cast<size_t>(H));
        for (int64_t b = b0; b < b1; ++b) {
          if (step >= lens[b]) continue;
          int64_t t = reverse ? lens[b] - 1 - step : step;
          T *hb = h.data() + b * H, *cb = c.data() + b * H;
          const T* xb = xw.data() + n.x_row(t, b) * G;
          T *zi = z.data(), *zo = zi + H, *zf = zi + 2 * H, *zc = zi + 3 * H;
          std::copy_n(xb, G, zi);
          accumulate_recurrent(hb, rt.data(), zi, H, G);  // z += h[b] . R^T (the previous step's h)
          if (Pd)
            for (int64_t j = 0; j < H; ++j) {
              zi[j] += Pd[j] * cb[j];
              zf[j] += Pd[2 * H + j] * cb[j];
            }
          sigmoid_run(zi, H, clip);
          sigmoid_run(zf, H, clip);
          tanh_run(zc, H, clip);
          for (int64_t j = 0; j < H; ++j) cb[j] = zf[j] * cb[j] + zi[j] * zc[j];
          if (Pd)
            for (int64_t j = 0; j < H; ++j) zo[j] += Pd[H + j] * cb[j];  // peephole sees the new cell
          sigmoid_run(zo, H, clip);
          std::copy_n(cb, H, tc.data());
          tanh_run(tc.data(), H, std::numeric_limits<double>::infinity());  // no clip on the cell
          for (int64_t j = 0; j < H; ++j) hb[j] = zo[j] * tc[j];
          if (Y) std::copy_n(hb, H, Y + n.y_offset(t, d, b));
        }
      });
    }
    for (int64_t b = 0; b < N; ++b) {
      if (Yh) std::copy_n(h.data() + b * H, H, Yh + n.state_offset(d, b));
      if (Yc) std::copy_n(c.data() + b * H, H, Yc + n.state_offset(d, b));
    }
  }
}

void lstm_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f64) lstm_typed<double>(ctx);
  else lstm_typed<float>(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(LSTM, cpu, kF32 | kF64, lstm_cpu)

}  // namespace porta::cpu
