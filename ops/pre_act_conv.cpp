// PreActConv (ai.porta, version 1): a per-channel affine map of X and an activation, then a
// pointwise convolution of the result, as one op (the "pre-activation" order BN -> ReLU ->
// Conv of DenseNet's layers and pre-activation ResNets):
//   Y[n, m, p] = B[m] + sum_c W[m, c] * activation(X[n, c, p] * Scale[c] + Shift[c])
// X: N x C x spatial... (rank >= 3, any float dtype). Scale, Shift: [C]. W: M x C x 1 x ... x 1
// (a 1x1 convolution weight of X's rank: stride 1, no padding, group 1). B: [M], optional. All
// of X's dtype. Y: N x M x spatial.... `activation` names one of ops/fused_activation.hpp's
// activations ("" for none), with its floats `activation_alpha` and `activation_beta`. The
// porta-internal `porta_activation` (and its floats), as on Conv, applies one to Y: the
// Conv's own fused activation, which the graph rewrite keeps.
// The graph rewrite of runtime/pre_act_conv_fusion.cpp makes it from an inference
// BatchNormalization (its activation fused) read by pointwise Convs alone: each Conv's kernel
// then maps the channels it reads anyway, and the normalized map is never written.
#include "ops/activation_nodes.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(PreActConv) {
  OpSchema s;
  s.name = "PreActConv";
  s.domain = kPortaDomain;
  s.inputs = {"X", "Scale", "Shift", "W", "B?"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("activation", "Relu"),      attr_float("activation_alpha", 0.0),
             attr_float("activation_beta", 0.0),       attr_string("porta_activation", ""),
             attr_float("porta_activation_alpha", 0.0), attr_float("porta_activation_beta", 0.0)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "X, Scale, Shift, W and B");
    parse_fused_activation(*ctx.attrs, "PreActConv", "activation");  // rejects an unknown name
    parse_fused_activation(*ctx.attrs, "PreActConv");
    const Shape& x = ctx.shape(0);
    if (x.size() < 3) throw ShapeError(str("[PreActConv] X should be N x C x spatial..., got ", shape_str(x)));
    const int64_t C = x[1];
    require_last_axis_vector(ctx, 1, C, "Scale");
    require_last_axis_vector(ctx, 2, C, "Shift");
    const Shape& w = ctx.shape(3);
    bool ok = w.size() == x.size() && w[1] == C;
    for (size_t k = 2; ok && k < w.size(); ++k) ok = w[k] == 1;
    if (!ok)
      throw ShapeError(str("[PreActConv] W should be M x ", C, " x 1... (a 1x1 convolution weight of X's rank; X ",
                           shape_str(x), "), got ", shape_str(w)));
    if (ctx.has_input(4)) require_last_axis_vector(ctx, 4, w[0], "B");
    Shape y = x;
    y[1] = w[0];
    ctx.set_output(0, y, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    const int64_t N = x.dim(0), C = x.dim(1), M = ctx.in(3).dim(0);
    const int64_t P = N * C == 0 ? shape_numel(Shape(x.shape().begin() + 2, x.shape().end())) : x.numel() / (N * C);
    const FusedActivation act = parse_fused_activation(*ctx.attrs, "PreActConv", "activation");
    const FusedActivation out = parse_fused_activation(*ctx.attrs, "PreActConv");
    const double *px = x.data<double>(), *scale = ctx.in(1).data<double>(), *shift = ctx.in(2).data<double>();
    const double* w = ctx.in(3).data<double>();
    const double* b = ctx.has_input(4) ? ctx.in(4).data<double>() : nullptr;
    double* y = ctx.out(0).data<double>();
    std::vector<double> col(static_cast<size_t>(C));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t p = 0; p < P; ++p) {
        for (int64_t c = 0; c < C; ++c) col[c] = act(px[(n * C + c) * P + p] * scale[c] + shift[c]);
        for (int64_t m = 0; m < M; ++m) {
          double acc = b ? b[m] : 0.0;
          for (int64_t c = 0; c < C; ++c) acc += w[m * C + c] * col[c];
          y[(n * M + m) * P + p] = out(acc);
        }
      }
  };
  // Mul and Add by Scale and Shift reshaped to C x 1 x ... (broadcast over the spatial axes),
  // the activation's nodes, Conv: the nodes of an inference BatchNormalization written out.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    const ValueId x = in[0];
    const size_t rank = b.shape(x).size();
    std::vector<double> dims(rank - 1, 1.0);
    dims[0] = -1.0;
    const ValueId per_channel = b.constant(Tensor::from_values(dims, {static_cast<int64_t>(rank - 1)}, DType::i64));
    ValueId v = b.add1("Mul", {x, b.add1("Reshape", {in[1], per_channel})});
    v = b.add1("Add", {v, b.add1("Reshape", {in[2], per_channel})});
    v = activation_nodes(b, parse_fused_activation(a, "PreActConv", "activation"), v);
    std::vector<ValueId> conv{v, in[3]};
    if (present(in, 4)) conv.push_back(in[4]);
    return std::vector<ValueId>{activation_nodes(b, parse_fused_activation(a, "PreActConv"), b.add1("Conv", conv))};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    auto act = [](const char* name, double alpha = 0.0, double beta = 0.0) {
      Attributes a;
      a.set("activation", std::string(name));
      a.set("activation_alpha", alpha);
      a.set("activation_beta", beta);
      return a;
    };
    // DenseNet's bottleneck over a 2x2 map and a 4x4 one (vulkan's "rows": positions as rows of
    // the product, vec4 stores), its transition over 8x8 (the texel GEMM, vec4 texels of X).
    c.push_back(
        {"dense_2x2", {in({1, 64, 2, 2}), in({64}), in({64}), in({32, 64, 1, 1}), in({32})}, act("Relu"), kF32});
    c.push_back({"dense_4x4", {in({2, 128, 4, 4}), in({128}), in({128}), in({40, 128, 1, 1}), in({40})}, act("Relu"),
                 kF32});
    c.push_back({"transition_8x8", {in({1, 96, 8, 8}), in({96}), in({96}), in({48, 96, 1, 1})}, act("Relu"), kF32});
    // Maps of positions no multiple of 4 (X by element): 3x3 (rows), 7x7 (the texel GEMM); more
    // than 8 output channels per column tile, 33 of them (a partial tile and an odd count).
    c.push_back({"map_3x3", {in({2, 16, 3, 3}), in({16}), in({16}), in({33, 16, 1, 1}), in({33})},
                 act("LeakyRelu", 0.1), kF32});
    c.push_back({"map_7x7", {in({1, 32, 7, 7}), in({32}), in({32}), in({33, 32, 1, 1}), in({33})},
                 act("Clip", -0.5, 1.5), kF32});
    // No activation; 1-D and 3-D spatial axes; channels no multiple of 4 (vulkan declines).
    c.push_back({"affine_only_1d", {in({3, 8, 17}), in({8}), in({8}), in({12, 8, 1}), in({12})}, act(""), kF32});
    c.push_back({"3d", {in({1, 4, 3, 2, 4}), in({4}), in({4}), in({6, 4, 1, 1, 1})}, act("Sigmoid"), kF32});
    c.push_back({"odd_channels", {in({1, 5, 4, 4}), in({5}), in({5}), in({7, 5, 1, 1}), in({7})}, act("Relu"), kF32});
    // Long channels (K past the texel GEMM's 32-row tiles), a large map (past a workgroup's
    // columns: 2 x 3 x 1024 positions).
    c.push_back(
        {"long_k", {in({1, 520, 4, 4}), in({520}), in({520}), in({24, 520, 1, 1}), in({24})}, act("Relu"), kF32});
    c.push_back({"large_map", {in({2, 8, 48, 64}), in({8}), in({8}), in({12, 8, 1, 1}), in({12})}, act("Relu"), kF32});
    // No images; no output channels; one of each.
    c.push_back({"no_images", {in({0, 8, 2, 2}), in({8}), in({8}), in({4, 8, 1, 1})}, act("Relu"), kF32});
    c.push_back({"no_outputs", {in({1, 8, 2, 2}), in({8}), in({8}), in({0, 8, 1, 1}), in({0})}, act("Relu"), kF32});
    c.push_back({"one", {in({1, 4, 1, 1}), in({4}), in({4}), in({1, 4, 1, 1}), in({1})}, act("Relu"), kF32});
    // The Conv's own activation after the product (DenseNet's bottleneck: its BatchNorm and
    // ReLU folded into the Conv before the rewrite), over both kernels' maps.
    for (const char* map : {"4x4", "8x8"}) {
      Attributes a = act("Relu");
      a.set("porta_activation", std::string("Relu"));
      const int64_t h = map[0] - '0';
      c.push_back({str("output_relu_", map), {in({1, 32, h, h}), in({32}), in({32}), in({16, 32, 1, 1}), in({16})}, a,
                   kF32});
    }
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>& outs, const Attributes&) {
    return static_cast<double>(shape_numel(outs[0])) * 2.0 * static_cast<double>(ins[0][1]) +
           static_cast<double>(shape_numel(ins[0])) * 2.0;
  };
  return s;
}

}  // namespace porta::opdef
