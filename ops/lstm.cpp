// LSTM (ONNX, layouts 0 and 1): gates in iofc order, optional B (Wb then Rb), sequence_lens,
// initial_h, initial_c and peepholes P (i, o, f); directions forward, reverse and
// bidirectional; optional clip. Outputs Y, Y_h, Y_c are all optional. Steps past a batch
// entry's sequence length leave Y at 0; Y_h/Y_c hold the state after its last step.
#include <algorithm>
#include <cmath>

#include "ops/common.hpp"
#include "ops/rnn_util.hpp"

namespace porta::opdef {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Plain per-(direction, batch entry, step) evaluation of the ONNX equations.
void lstm_reference(KernelContext& ctx) {
  RnnDims n = rnn_dims(ctx);
  std::vector<int64_t> lens = rnn_lengths(ctx, n);
  double clip = rnn_clip(*ctx.attrs);
  int64_t H = n.hidden, I = n.input;
  const double *X = ctx.in(0).data<double>(), *W = ctx.in(1).data<double>(), *R = ctx.in(2).data<double>();
  auto opt = [&](size_t i) { return ctx.has_input(i) ? ctx.in(i).data<double>() : nullptr; };
  const double *B = opt(3), *H0 = opt(5), *C0 = opt(6), *P = opt(7);
  auto out = [&](size_t i) { return i < ctx.outputs.size() && ctx.out(i).defined() ? ctx.out(i).data<double>() : nullptr; };
  double *Y = out(0), *Yh = out(1), *Yc = out(2);
  auto clipped = [clip](double v) { return std::clamp(v, -clip, clip); };
  for (int64_t d = 0; d < n.directions; ++d) {
    bool reverse = rnn_reverse(*ctx.attrs, d);
    const double *Wd = W + d * 4 * H * I, *Rd = R + d * 4 * H * H;
    for (int64_t b = 0; b < n.batch; ++b) {
      std::vector<double> h(H, 0.0), c(H, 0.0), g(4 * H);
      for (int64_t j = 0; j < H; ++j) {
        if (H0) h[j] = H0[n.state_offset(d, b) + j];
        if (C0) c[j] = C0[n.state_offset(d, b) + j];
      }
      for (int64_t step = 0; step < lens[b]; ++step) {
        int64_t t = reverse ? lens[b] - 1 - step : step;
        for (int64_t r = 0; r < 4 * H; ++r) {
          double v = B ? B[d * 8 * H + r] + B[d * 8 * H + 4 * H + r] : 0.0;
          for (int64_t k = 0; k < I; ++k) v += X[n.x_row(t, b) * I + k] * Wd[r * I + k];
          for (int64_t k = 0; k < H; ++k) v += h[k] * Rd[r * H + k];
          g[r] = v;
        }
        for (int64_t j = 0; j < H; ++j) {
          double pi = P ? P[d * 3 * H + j] : 0, po = P ? P[d * 3 * H + H + j] : 0, pf = P ? P[d * 3 * H + 2 * H + j] : 0;
          double i_gate = sigmoid(clipped(g[j] + pi * c[j]));
          double f_gate = sigmoid(clipped(g[2 * H + j] + pf * c[j]));
          double cand = std::tanh(clipped(g[3 * H + j]));
          c[j] = f_gate * c[j] + i_gate * cand;
          double o_gate = sigmoid(clipped(g[H + j] + po * c[j]));
          h[j] = o_gate * std::tanh(c[j]);
        }
        if (Y)
          for (int64_t j = 0; j < H; ++j) Y[n.y_offset(t, d, b) + j] = h[j];
      }
      for (int64_t j = 0; j < H; ++j) {
        if (Yh) Yh[n.state_offset(d, b) + j] = h[j];
        if (Yc) Yc[n.state_offset(d, b) + j] = c[j];
      }
    }
  }
}

std::vector<OpCase> lstm_cases() {
  // Weights in [-0.6, 0.6] keep the gates away from saturation, so the check is sensitive.
  auto w = [](Shape s) { return in(std::move(s), -0.6, 0.6); };
  const int64_t S = 7, N = 3, I = 5, H = 4;
  Attributes bi{{"direction", std::string("bidirectional")}}, rev{{"direction", std::string("reverse")}};
  std::vector<OpCase> c;
  c.push_back({"forward", {in({S, N, I}), w({1, 4 * H, I}), w({1, 4 * H, H}), w({1, 8 * H})}, {}, kF32 | kF64, 3});
  c.push_back({"reverse_initial_state",
               {in({S, N, I}), w({1, 4 * H, I}), w({1, 4 * H, H}), w({1, 8 * H}), in_absent(), in({1, N, H}), in({1, N, H})},
               rev, kF32 | kF64, 3});
  c.push_back({"bidirectional_all_inputs",
               {in({S, N, I}), w({2, 4 * H, I}), w({2, 4 * H, H}), w({2, 8 * H}), in_values({N}, DType::i32, {7, 3, 5}),
                in({2, N, H}), in({2, N, H}), w({2, 3 * H})},
               bi, kF32 | kF64, 3});
  c.push_back({"no_bias_hidden_size", {in({S, N, I}), w({1, 4 * H, I}), w({1, 4 * H, H})}, {{"hidden_size", H}}, kF32, 3});
  c.push_back({"peephole_forward",
               {in({S, N, I}), w({1, 4 * H, I}), w({1, 4 * H, H}), w({1, 8 * H}), in_absent(), in_absent(), in_absent(),
                w({1, 3 * H})},
               {}, kF32, 3});
  c.push_back({"clip", {in({S, N, I}, -4, 4), w({1, 4 * H, I}), w({1, 4 * H, H})}, {{"clip", 0.5}}, kF32, 3});
  c.push_back({"only_y", {in({S, N, I}), w({2, 4 * H, I}), w({2, 4 * H, H})}, bi, kF32, 1});
  c.push_back({"y_and_y_h", {in({S, N, I}), w({1, 4 * H, I}), w({1, 4 * H, H})}, rev, kF32, 2});
  c.push_back({"single_step", {in({1, 1, 1}), w({1, 4, 1}), w({1, 4, 1})}, {}, kF32, 3});
  c.push_back({"empty_batch", {in({S, 0, I}), w({1, 4 * H, I}), w({1, 4 * H, H})}, {}, kF32, 3});
  // Layout 1 (batch-major X, Y and states); S != N so a mixed-up axis cannot pass.
  Attributes bi_batch_major{{"direction", std::string("bidirectional")}, {"layout", int64_t{1}}};
  c.push_back({"batch_major_bidirectional",
               {in({N, S, I}), w({2, 4 * H, I}), w({2, 4 * H, H}), w({2, 8 * H}), in_values({N}, DType::i32, {3, 7, 5}),
                in({N, 2, H}), in({N, 2, H}), w({2, 3 * H})},
               bi_batch_major, kF32 | kF64, 3});
  c.push_back({"batch_major_forward", {in({N, S, I}), w({1, 4 * H, I}), w({1, 4 * H, H}), w({1, 8 * H})},
               {{"layout", int64_t{1}}}, kF32, 3});
  c.push_back({"zero_length", {in({S, 2, I}), w({1, 4 * H, I}), w({1, 4 * H, H}), in_absent(),
                               in_values({2}, DType::i64, {0, 7}), in({1, 2, H})}, rev, kF32, 3});
  // Past a driver's per-invocation loop cap (lavapipe: 65535 iterations, about 440 steps of this
  // size in one workgroup): the Vulkan kernel splits the sequence over dispatches; a kernel that
  // ran it in one would stop its loops early and give wrong values without an error.
  auto small = [](Shape s) { return in(std::move(s), -0.15, 0.15); };
  c.push_back({"long_sequence_bidirectional",
               {in({600, 1, 16}), small({2, 4 * 64, 16}), small({2, 4 * 64, 64}), small({2, 8 * 64})}, bi, kF32, 3});
  return c;
}

}  // namespace

PORTA_REGISTER_OP(LSTM) {
  OpSchema s;
  s.name = "LSTM";
  s.inputs = {"X", "W", "R", "B?", "sequence_lens?", "initial_h?", "initial_c?", "P?"};
  s.host_read_inputs = {4};
  s.outputs = {"Y?", "Y_h?", "Y_c?"};
  s.attrs = rnn_attrs();
  s.attrs.push_back(attr_int("input_forget", 0));
  s.infer = [](InferContext& ctx) { rnn_infer(ctx, 4); };
  s.reference = lstm_reference;
  s.cases = lstm_cases;
  // 2 flops per multiply-add of the gate projections; elementwise work is negligible.
  s.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attributes& a) {
    double seq = static_cast<double>(in[0][0]), batch = static_cast<double>(in[0][1]);
    return 2.0 * seq * batch * static_cast<double>(shape_numel(in[1]) + shape_numel(in[2]));
  };
  return s;
}

}  // namespace porta::opdef
