// GatedLinear (ai.porta, version 1): a gated linear unit, the feed-forward layer of LLaMA-style
// transformers (SwiGLU) and of T5 v1.1 (GeGLU):
//   Y = activation(X . Wg + Bg) * (X . Wu + Bu)
// X: [..., K] (rank >= 1, any float dtype). Wg, Wu: K x F. Bg, Bu: [F], optional. All of X's
// dtype. Y: [..., F]. `activation` names one of ops/fused_activation.hpp's activations ("" for
// none: a bilinear layer), with its floats `activation_alpha` and `activation_beta`; default
// Swish (SiLU).
// The graph rewrite of runtime/gated_linear_fusion.cpp makes it from two MatMuls of one input
// and the Mul of their results, as PyTorch exports `F.silu(self.w1(x)) * self.w3(x)`.
// With `rms_epsilon` >= 0 (default -1: none), X's rows are RMS-normalized first, X replaced by
// X / sqrt(mean(X^2 over the last axis) + rms_epsilon), the norm's scale folded into Wg's and
// Wu's rows: LLaMA's norm before its feed-forward layer, taken in by
// runtime/rms_norm_matmul_fusion.cpp.
#include <cmath>

#include "ops/activation_nodes.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(GatedLinear) {
  OpSchema s;
  s.name = "GatedLinear";
  s.domain = kPortaDomain;
  s.inputs = {"X", "Wg", "Wu", "Bg?", "Bu?"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("activation", "Swish"), attr_float("activation_alpha", 0.0),
             attr_float("activation_beta", 0.0), attr_float("rms_epsilon", -1.0)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "X, Wg, Wu, Bg and Bu");
    parse_fused_activation(*ctx.attrs, "GatedLinear", "activation");  // rejects an unknown name
    const Shape& x = ctx.shape(0);
    if (x.empty()) throw ShapeError("[GatedLinear] X should have rank >= 1 ([..., K]), got a scalar");
    const Shape &wg = ctx.shape(1), &wu = ctx.shape(2);
    if (wg.size() != 2 || wg[0] != x.back())
      throw ShapeError(str("[GatedLinear] Wg should be K x F with K = ", x.back(), " (X ", shape_str(x), "), got ",
                           shape_str(wg)));
    if (wu != wg)
      throw ShapeError(str("[GatedLinear] Wu should have Wg's shape ", shape_str(wg), ", got ", shape_str(wu)));
    const double rms = ctx.attrs->get_float("rms_epsilon");
    if (!(rms >= 0 || rms == -1))
      throw InvalidModel(str("[GatedLinear] rms_epsilon should be >= 0 (normalize X) or -1 (not), got ", rms));
    if (ctx.has_input(3)) require_last_axis_vector(ctx, 3, wg[1], "Bg");
    if (ctx.has_input(4)) require_last_axis_vector(ctx, 4, wg[1], "Bu");
    Shape y = x;
    y.back() = wg[1];
    ctx.set_output(0, y, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const int64_t K = x.shape().back(), F = ctx.in(1).dim(1);
    int64_t M = 1;  // rows: the product of X's leading axes
    for (size_t i = 0; i + 1 < x.shape().size(); ++i) M *= x.dim(static_cast<int>(i));
    const FusedActivation act = parse_fused_activation(*ctx.attrs, "GatedLinear", "activation");
    const double *px = x.data<double>(), *wg = ctx.in(1).data<double>(), *wu = ctx.in(2).data<double>();
    const double* bg = ctx.has_input(3) ? ctx.in(3).data<double>() : nullptr;
    const double* bu = ctx.has_input(4) ? ctx.in(4).data<double>() : nullptr;
    double* y = ctx.out(0).data<double>();
    const double rms_eps = ctx.attrs->get_float("rms_epsilon");
    for (int64_t m = 0; m < M; ++m) {
      double inv_rms = 1.0;
      if (rms_eps >= 0) {
        double sum_sq = 0;
        for (int64_t k = 0; k < K; ++k) sum_sq += px[m * K + k] * px[m * K + k];
        inv_rms = K ? 1.0 / std::sqrt(sum_sq / static_cast<double>(K) + rms_eps) : 0.0;
      }
      for (int64_t f = 0; f < F; ++f) {
        double g = 0.0, u = 0.0;
        for (int64_t k = 0; k < K; ++k) {
          g += px[m * K + k] * wg[k * F + f];
          u += px[m * K + k] * wu[k * F + f];
        }
        g = g * inv_rms + (bg ? bg[f] : 0.0);
        u = u * inv_rms + (bu ? bu[f] : 0.0);
        y[m * F + f] = act(g) * u;
      }
    }
  };
  // MatMul (+ Add), the activation, MatMul (+ Add), Mul: the nodes the layer is exported as.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    ValueId x = in[0];
    if (const double eps = a.get_float("rms_epsilon", -1.0); eps >= 0) {
      // RmsNorm's decomposition without its scale (folded into Wg and Wu).
      ValueId mean =
          b.add1("ReduceMean", {b.add1("Mul", {x, x})}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}});
      x = b.add1("Div", {x, b.add1("Sqrt", {b.add1("Add", {mean, scalar_constant(b, eps, b.dtype(x))})})});
    }
    ValueId g = b.add1("MatMul", {x, in[1]});
    if (present(in, 3)) g = b.add1("Add", {g, in[3]});
    g = activation_nodes(b, parse_fused_activation(a, "GatedLinear", "activation"), g);
    ValueId u = b.add1("MatMul", {x, in[2]});
    if (present(in, 4)) u = b.add1("Add", {u, in[4]});
    return std::vector<ValueId>{b.add1("Mul", {g, u})};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    auto act = [](const char* name) {
      Attributes a;
      a.set("activation", std::string(name));
      return a;
    };
    // LLaMA's MLP: 2 x 16 tokens, width 64, hidden 44 (no bias; small enough for the SIMT
    // emulator, which runs the decomposition's MatMuls thread by thread).
    c.push_back({"swiglu", {in({2, 16, 64}), in({64, 44}), in({64, 44})}, {}, kF32});
    // Biases, GELU (T5 v1.1's GeGLU), rows that are no multiple of the kernel's tiles.
    c.push_back({"geglu_bias", {in({37, 48}), in({48, 24}), in({48, 24}), in({24}), in({24})}, act("Gelu"), kF32});
    // One bias only; no activation (bilinear); odd K and F.
    c.push_back({"bilinear_one_bias", {in({3, 5, 13}), in({13, 7}), in({13, 7}), in_absent(), in({7})}, act(""), kF32});
    // Outputs that are no multiple of 4 (scalar stores), the up projection's bias alone.
    c.push_back({"hardswish_up_bias", {in({20, 16}), in({16, 10}), in({16, 10}), in_absent(), in({10})},
                 act("HardSwish"), kF32});
    // X RMS-normalized first (LLaMA's norm before its feed-forward layer), with biases; and
    // with K past 512 (32-row tiles).
    Attributes rms;
    rms.set("rms_epsilon", 1e-5);
    c.push_back({"rms_swiglu_bias", {in({2, 19, 64}), in({64, 44}), in({64, 44}), in({44}), in({44})}, rms, kF32});
    c.push_back({"rms_long_rows", {in({24, 520}), in({520, 16}), in({520, 16})}, rms, kF32});
    // A vector; a single row (decoding one token).
    c.push_back({"vector", {in({32}), in({32, 16}), in({32, 16})}, {}, kF32});
    c.push_back({"one_row", {in({1, 1, 64}), in({64, 96}), in({64, 96})}, {}, kF32});
    // No rows; no outputs (F 0).
    c.push_back({"no_rows", {in({0, 8}), in({8, 4}), in({8, 4})}, {}, kF32});
    c.push_back({"no_features", {in({3, 8}), in({8, 0}), in({8, 0})}, {}, kF32});
    // A LLaMA-style MLP at width 1024 (2816 hidden: 7B's ratio). Conformance runs it on every
    // device, the SIMT emulator's decomposition included: 7B's own sizes took 57 s there.
    OpCase big{"mlp_64_tokens_1024x2816", {in({64, 1024}), in({1024, 2816}), in({1024, 2816})}, {}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>& outs, const Attributes&) {
    const double k = ins[0].empty() ? 0.0 : static_cast<double>(ins[0].back());
    return static_cast<double>(shape_numel(outs[0])) * (4.0 * k + 3.0);
  };
  return s;
}

}  // namespace porta::opdef
