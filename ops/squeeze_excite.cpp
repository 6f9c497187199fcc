// SqueezeExcite (ai.porta, version 1): a squeeze-and-excitation block, which scales each channel
// of X by a gate computed from the means of all channels:
//   m[n, c] = mean of X[n, c, ...] over the spatial axes
//   h[n, r] = activation(B1[r] + sum_c W1[r, c] * m[n, c])
//   s[n, c] = gate(B2[c] + sum_r W2[c, r] * h[n, r])
//   Y[n, c, ...] = X[n, c, ...] * s[n, c]
// X: N x C x spatial... (rank >= 3, spatial axes non-empty, any float dtype). W1: R x C x 1 x ...
// x 1 and W2: C x R x 1 x ... x 1 (1x1 convolution weights of X's rank), B1 [R] and B2 [C]
// optional; all of X's dtype. Y: X's shape and dtype. `activation` and `gate` name one of
// ops/fused_activation.hpp's activations each ("" for none), with their floats
// `activation_alpha`, `activation_beta`, `gate_alpha` and `gate_beta` as there.
// The graph rewrite of runtime/squeeze_excite_fusion.cpp makes it from what MobileNetV3,
// EfficientNet and RegNetY export: GlobalAveragePool, two 1x1 Convs with their activations, Mul.
#include <cmath>

#include "ops/activation_nodes.hpp"

namespace porta::opdef {
namespace {

// Throws ShapeError unless input `i` is a 1x1 convolution weight of X's rank from `in` to
// `out` channels.
void require_pointwise_weight(const InferContext& ctx, size_t i, int64_t out, int64_t in, const char* what,
                              const char* layout) {
  const Shape& w = ctx.shape(i);
  bool ok = w.size() == ctx.shape(0).size() && w[0] == out && w[1] == in;
  for (size_t k = 2; ok && k < w.size(); ++k) ok = w[k] == 1;
  if (!ok)
    throw ShapeError(str("[SqueezeExcite] ", what, " should be ", layout, " (a 1x1 convolution weight of X's rank; X ",
                         shape_str(ctx.shape(0)), "), got ", shape_str(w)));
}

}  // namespace

PORTA_REGISTER_OP(SqueezeExcite) {
  OpSchema s;
  s.name = "SqueezeExcite";
  s.domain = kPortaDomain;
  s.inputs = {"X", "W1", "B1?", "W2", "B2?"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("activation", "Relu"), attr_float("activation_alpha", 0.0), attr_float("activation_beta", 0.0),
             attr_string("gate", "Sigmoid"),    attr_float("gate_alpha", 0.0),       attr_float("gate_beta", 0.0)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "X, W1, B1, W2 and B2");
    parse_fused_activation(*ctx.attrs, "SqueezeExcite", "activation");  // rejects an unknown name
    parse_fused_activation(*ctx.attrs, "SqueezeExcite", "gate");
    const Shape& x = ctx.shape(0);
    if (x.size() < 3) throw ShapeError(str("[SqueezeExcite] X should be N x C x spatial..., got ", shape_str(x)));
    for (size_t i = 2; i < x.size(); ++i)
      if (x[i] == 0) throw ShapeError(str("[SqueezeExcite] X's spatial axes should be non-empty, got ", shape_str(x)));
    const int64_t C = x[1];
    if (ctx.shape(1).size() < 2)
      throw ShapeError(str("[SqueezeExcite] W1 should be R x C x 1..., got ", shape_str(ctx.shape(1))));
    const int64_t R = ctx.shape(1)[0];
    require_pointwise_weight(ctx, 1, R, C, "W1", "R x C x 1...");
    require_pointwise_weight(ctx, 3, C, R, "W2", "C x R x 1...");
    if (ctx.has_input(2)) require_last_axis_vector(ctx, 2, R, "B1");
    if (ctx.has_input(4)) require_last_axis_vector(ctx, 4, C, "B2");
    ctx.set_output(0, x, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const int64_t N = x.dim(0), C = x.dim(1), R = ctx.in(1).dim(0);
    const int64_t P = N * C == 0 ? 0 : x.numel() / (N * C);
    const FusedActivation act = parse_fused_activation(*ctx.attrs, "SqueezeExcite", "activation");
    const FusedActivation gate = parse_fused_activation(*ctx.attrs, "SqueezeExcite", "gate");
    const double *px = x.data<double>(), *w1 = ctx.in(1).data<double>(), *w2 = ctx.in(3).data<double>();
    const double* b1 = ctx.has_input(2) ? ctx.in(2).data<double>() : nullptr;
    const double* b2 = ctx.has_input(4) ? ctx.in(4).data<double>() : nullptr;
    double* y = ctx.out(0).data<double>();
    std::vector<double> m(static_cast<size_t>(C)), h(static_cast<size_t>(R));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        for (int64_t p = 0; p < P; ++p) sum += px[(n * C + c) * P + p];
        m[c] = sum / static_cast<double>(P);
      }
      for (int64_t r = 0; r < R; ++r) {
        double acc = b1 ? b1[r] : 0.0;
        for (int64_t c = 0; c < C; ++c) acc += w1[r * C + c] * m[c];
        h[r] = act(acc);
      }
      for (int64_t c = 0; c < C; ++c) {
        double acc = b2 ? b2[c] : 0.0;
        for (int64_t r = 0; r < R; ++r) acc += w2[c * R + r] * h[r];
        const double sc = gate(acc);
        for (int64_t p = 0; p < P; ++p) y[(n * C + c) * P + p] = px[(n * C + c) * P + p] * sc;
      }
    }
  };
  // GlobalAveragePool, Conv (1x1) and its activation, Conv (1x1) and the gate, Mul: the nodes
  // the block is exported as.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    const ValueId x = in[0];
    ValueId v = b.add1("GlobalAveragePool", {x});
    std::vector<ValueId> fc1{v, in[1]};
    if (present(in, 2)) fc1.push_back(in[2]);
    v = activation_nodes(b, parse_fused_activation(a, "SqueezeExcite", "activation"), b.add1("Conv", fc1));
    std::vector<ValueId> fc2{v, in[3]};
    if (present(in, 4)) fc2.push_back(in[4]);
    v = activation_nodes(b, parse_fused_activation(a, "SqueezeExcite", "gate"), b.add1("Conv", fc2));
    return std::vector<ValueId>{b.add1("Mul", {x, v})};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    auto acts = [](const char* act, const char* gate, double ga = 0.0, double gb = 0.0) {
      Attributes a;
      a.set("activation", std::string(act));
      a.set("gate", std::string(gate));
      a.set("gate_alpha", ga);
      a.set("gate_beta", gb);
      return a;
    };
    const Attributes mobilenet = acts("Relu", "HardSigmoid", 1.0 / 6.0, 0.5);
    const Attributes efficientnet = acts("Swish", "Sigmoid");
    // EfficientNet's first block (C 32, R 8) over a map of a multiple of 4 positions.
    c.push_back({"efficientnet", {in({1, 32, 16, 16}), in({8, 32, 1, 1}), in({8}), in({32, 8, 1, 1}), in({32})},
                 efficientnet, kF32});
    // MobileNetV3's: a 3x3 map (no multiple of 4), two images.
    c.push_back({"mobilenet_3x3", {in({2, 96, 3, 3}), in({24, 96, 1, 1}), in({24}), in({96, 24, 1, 1}), in({96})},
                 mobilenet, kF32});
    // More channels than a workgroup's invocations, several per invocation, and a hidden
    // width past one: C 200, R 100, a 2x2 map; and C 600, R 150 (products past vulkan's bound).
    c.push_back({"wide", {in({1, 200, 2, 2}), in({100, 200, 1, 1}), in({100}), in({200, 100, 1, 1}), in({200})},
                 acts("Relu", "Sigmoid"), kF32});
    c.push_back({"wider", {in({1, 600, 2, 2}), in({150, 600, 1, 1}), in({150}), in({600, 150, 1, 1}), in({600})},
                 acts("Relu", "Sigmoid"), kF32});
    // No biases; 1-D and 3-D spatial axes; one channel, one position.
    c.push_back({"no_bias_1d", {in({3, 5, 7}), in({2, 5, 1}), in_absent(), in({5, 2, 1}), in_absent()},
                 acts("Relu", "Sigmoid"), kF32});
    c.push_back({"3d", {in({1, 4, 3, 2, 5}), in({3, 4, 1, 1, 1}), in({3}), in({4, 3, 1, 1, 1}), in({4})},
                 acts("LeakyRelu", "Tanh"), kF32});
    c.push_back({"one", {in({1, 1, 1, 1}), in({1, 1, 1, 1}), in({1}), in({1, 1, 1, 1}), in({1})},
                 acts("", ""), kF32});
    // A large map: many positions per channel (8192, and 8195: three past a multiple of 4).
    c.push_back({"map_8192", {in({1, 8, 64, 128}), in({2, 8, 1, 1}), in({2}), in({8, 2, 1, 1}), in({8})},
                 acts("Relu", "HardSigmoid", 0.2, 0.5), kF32});
    c.push_back({"map_8195", {in({1, 6, 5, 1639}), in({2, 6, 1, 1}), in({2}), in({6, 2, 1, 1}), in({6})},
                 acts("Elu", "Clip", 0.0, 1.0), kF32});
    // No hidden channels (R 0): the gate of the bias alone. No images.
    c.push_back({"no_hidden", {in({1, 4, 2, 2}), in({0, 4, 1, 1}), in({0}), in({4, 0, 1, 1}), in({4})},
                 acts("Relu", "Sigmoid"), kF32});
    c.push_back({"no_images", {in({0, 4, 2, 2}), in({2, 4, 1, 1}), in({2}), in({4, 2, 1, 1}), in({4})},
                 acts("Relu", "Sigmoid"), kF32});
    OpCase big{"n8_c576_7x7", {in({8, 576, 7, 7}), in({144, 576, 1, 1}), in({144}), in({576, 144, 1, 1}), in({576})},
               mobilenet, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>&, const Attributes&) {
    const double x = static_cast<double>(shape_numel(ins[0]));
    const double n = ins[0].empty() ? 0.0 : static_cast<double>(ins[0][0]);
    const double w = static_cast<double>(shape_numel(ins[1]) + shape_numel(ins[3]));
    return 2.0 * x + 2.0 * n * w;  // the means and the scaling; the two products
  };
  return s;
}

}  // namespace porta::opdef
