// GRU (ONNX, layouts 0 and 1): gates in zrh order, optional B (Wb then Rb), sequence_lens and
// initial_h; directions forward, reverse and bidirectional; linear_before_reset 0 (reset
// gate applied to h before the recurrent product) or 1 (after it, as PyTorch and cuDNN do);
// optional clip. Outputs Y and Y_h are optional; steps past a sequence length leave Y at 0.
#include <algorithm>
#include <cmath>

#include "ops/common.hpp"
#include "ops/rnn_util.hpp"

namespace porta::opdef {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

void gru_reference(KernelContext& ctx) {
  RnnDims n = rnn_dims(ctx);
  std::vector<int64_t> lens = rnn_lengths(ctx, n);
  double clip = rnn_clip(*ctx.attrs);
  bool lbr = ctx.attrs->get_int("linear_before_reset") != 0;
  int64_t H = n.hidden, I = n.input;
  const double *X = ctx.in(0).data<double>(), *W = ctx.in(1).data<double>(), *R = ctx.in(2).data<double>();
  const double* B = ctx.has_input(3) ? ctx.in(3).data<double>() : nullptr;
  const double* H0 = ctx.has_input(5) ? ctx.in(5).data<double>() : nullptr;
  auto out = [&](size_t i) { return i < ctx.outputs.size() && ctx.out(i).defined() ? ctx.out(i).data<double>() : nullptr; };
  double *Y = out(0), *Yh = out(1);
  auto clipped = [clip](double v) { return std::clamp(v, -clip, clip); };
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = rnn_reverse(*ctx.attrs, d);
    const double *Wd = W + d * 3 * H * I, *Rd = R + d * 3 * H * H;
    const double *Wb = B ? B + d * 6 * H : nullptr, *Rb = B ? B + d * 6 * H + 3 * H : nullptr;
    for (int64_t b = 0; b < n.batch; ++b) {
      std::vector<double> h(H, 0.0), next(H);
      if (H0)
        for (int64_t j = 0; j < H; ++j) h[j] = H0[n.state_offset(d, b) + j];
      for (int64_t step = 0; step < lens[b]; ++step) {
        int64_t t = reverse ? lens[b] - 1 - step : step;
        const double* x = X + n.x_row(t, b) * I;
        auto xw = [&](int64_t row) {  // x . W[row] + Wb[row]
          double v = Wb ? Wb[row] : 0.0;
          for (int64_t k = 0; k < I; ++k) v += x[k] * Wd[row * I + k];
          return v;
        };
        auto hr = [&](const std::vector<double>& v, int64_t row) {  // v . R[row]
          double s = 0;
          for (int64_t k = 0; k < H; ++k) s += v[k] * Rd[row * H + k];
          return s;
        };
        std::vector<double> z(H), r(H);
        for (int64_t j = 0; j < H; ++j) {
          z[j] = sigmoid(clipped(xw(j) + hr(h, j) + (Rb ? Rb[j] : 0)));
          r[j] = sigmoid(clipped(xw(H + j) + hr(h, H + j) + (Rb ? Rb[H + j] : 0)));
        }
        std::vector<double> rh(H);
        for (int64_t j = 0; j < H; ++j) rh[j] = r[j] * h[j];
        for (int64_t j = 0; j < H; ++j) {
          double rbh = Rb ? Rb[2 * H + j] : 0;
          double pre = lbr ? xw(2 * H + j) + r[j] * (hr(h, 2 * H + j) + rbh) : xw(2 * H + j) + hr(rh, 2 * H + j) + rbh;
          double cand = std::tanh(clipped(pre));
          next[j] = (1 - z[j]) * cand + z[j] * h[j];
        }
        h = next;
        if (Y)
          for (int64_t j = 0; j < H; ++j) Y[n.y_offset(t, d, b) + j] = h[j];
      }
      if (Yh)
        for (int64_t j = 0; j < H; ++j) Yh[n.state_offset(d, b) + j] = h[j];
    }
  }
}

std::vector<OpCase> gru_cases() {
  auto w = [](Shape s) { return in(std::move(s), -0.6, 0.6); };
  const int64_t S = 7, N = 3, I = 5, H = 4;
  Attributes lbr{{"linear_before_reset", int64_t{1}}};
  Attributes bi_lbr{{"direction", std::string("bidirectional")}, {"linear_before_reset", int64_t{1}}};
  Attributes bi{{"direction", std::string("bidirectional")}}, rev{{"direction", std::string("reverse")}};
  std::vector<OpCase> c;
  c.push_back({"forward", {in({S, N, I}), w({1, 3 * H, I}), w({1, 3 * H, H}), w({1, 6 * H})}, {}, kF32 | kF64, 2});
  c.push_back({"forward_lbr", {in({S, N, I}), w({1, 3 * H, I}), w({1, 3 * H, H}), w({1, 6 * H})}, lbr, kF32 | kF64, 2});
  c.push_back({"reverse_initial_h",
               {in({S, N, I}), w({1, 3 * H, I}), w({1, 3 * H, H}), w({1, 6 * H}), in_absent(), in({1, N, H})},
               rev, kF32, 2});
  c.push_back({"bidirectional_all_inputs",
               {in({S, N, I}), w({2, 3 * H, I}), w({2, 3 * H, H}), w({2, 6 * H}), in_values({N}, DType::i32, {7, 3, 5}),
                in({2, N, H})},
               bi, kF32 | kF64, 2});
  c.push_back({"bidirectional_lbr_lengths",
               {in({S, N, I}), w({2, 3 * H, I}), w({2, 3 * H, H}), w({2, 6 * H}), in_values({N}, DType::i64, {2, 7, 0}),
                in({2, N, H})},
               bi_lbr, kF32, 2});
  // Layout 1 (batch-major X, Y and initial_h); S != N so a mixed-up axis cannot pass.
  Attributes bi_lbr_batch_major = bi_lbr;
  bi_lbr_batch_major.set("layout", int64_t{1});
  c.push_back({"batch_major_bidirectional_lbr",
               {in({N, S, I}), w({2, 3 * H, I}), w({2, 3 * H, H}), w({2, 6 * H}), in_values({N}, DType::i64, {7, 0, 4}),
                in({N, 2, H})},
               bi_lbr_batch_major, kF32 | kF64, 2});
  c.push_back({"batch_major_reverse", {in({N, S, I}), w({1, 3 * H, I}), w({1, 3 * H, H}), w({1, 6 * H})},
               {{"direction", std::string("reverse")}, {"layout", int64_t{1}}}, kF32, 2});
  c.push_back({"no_bias", {in({S, N, I}), w({1, 3 * H, I}), w({1, 3 * H, H})}, {{"hidden_size", H}}, kF32, 2});
  c.push_back({"clip", {in({S, N, I}, -4, 4), w({1, 3 * H, I}), w({1, 3 * H, H})}, {{"clip", 0.5}}, kF32, 2});
  c.push_back({"only_y", {in({S, N, I}), w({1, 3 * H, I}), w({1, 3 * H, H})}, {}, kF32, 1});
  c.push_back({"single_step", {in({1, 1, 1}), w({1, 3, 1}), w({1, 3, 1})}, lbr, kF32, 2});
  c.push_back({"empty_batch", {in({S, 0, I}), w({1, 3 * H, I}), w({1, 3 * H, H})}, {}, kF32, 2});
  // Past a driver's per-invocation loop cap (see LSTM's long_sequence case).
  auto small = [](Shape s) { return in(std::move(s), -0.15, 0.15); };
  c.push_back({"long_sequence", {in({600, 1, 16}), small({1, 3 * 64, 16}), small({1, 3 * 64, 64}), small({1, 6 * 64})},
               {}, kF32, 2});
  return c;
}

}  // namespace

PORTA_REGISTER_OP(GRU) {
  OpSchema s;
  s.name = "GRU";
  s.inputs = {"X", "W", "R", "B?", "sequence_lens?", "initial_h?"};
  s.host_read_inputs = {4};
  s.outputs = {"Y?", "Y_h?"};
  s.attrs = rnn_attrs();
  s.attrs.push_back(attr_int("linear_before_reset", 0));
  s.infer = [](InferContext& ctx) { rnn_infer(ctx, 3); };
  s.reference = gru_reference;
  s.cases = gru_cases;
  s.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attributes&) {
    double seq = static_cast<double>(in[0][0]), batch = static_cast<double>(in[0][1]);
    return 2.0 * seq * batch * static_cast<double>(shape_numel(in[1]) + shape_numel(in[2]));
  };
  return s;
}

}  // namespace porta::opdef
