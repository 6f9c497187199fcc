// BatchNormalization (opset 15), inference mode only:
//   Y = (X - input_mean) / sqrt(input_var + epsilon) * scale + B, per channel (axis 1).
// training_mode = 1 (batch statistics, running_mean / running_var outputs) is Unsupported.
// porta-internal attributes (not ONNX) `porta_activation`, `porta_activation_alpha` and
// `porta_activation_beta` make the op Act(BatchNormalization(...)) as they do Conv (names and
// math in ops/fused_activation.hpp; inference rejects an unknown name). Only porta's graph
// fusion sets them, for the activations a device's kernels declare (the cpu kernel: Relu,
// Clip, LeakyRelu, as in DenseNet's pre-activation BatchNormalization -> Relu -> Conv); other
// backends' kernels do not read them, so they have no conformance case here, which every
// backend would run; the reference applies them and tests/channels_last_steps_test.cpp covers them.
#include <cmath>

#include "ops/common.hpp"
#include "ops/fused_activation.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(BatchNormalization) {
  OpSchema s;
  s.name = "BatchNormalization";
  s.inputs = {"X", "scale", "B", "input_mean", "input_var"};
  s.outputs = {"Y", "running_mean?", "running_var?"};
  s.attrs = {attr_float("epsilon", 1e-5), attr_float("momentum", 0.9), attr_int("training_mode", 0),
             attr_string("porta_activation", ""), attr_float("porta_activation_alpha", 0.0),
             attr_float("porta_activation_beta", 0.0)};
  s.infer = [](InferContext& ctx) {
    if (ctx.attrs->get_int("training_mode") != 0)
      throw Unsupported("[BatchNormalization] training_mode=1 (batch statistics) is not supported; "
                        "expected an inference graph (training_mode=0)");
    if (ctx.outputs.size() > 1)
      throw Unsupported(str("[BatchNormalization] running_mean / running_var outputs exist only in "
                            "training mode; the node asks for ", ctx.outputs.size(), " outputs"));
    require_same_dtype(ctx);
    require_dtype(ctx, 0, kFloats);
    parse_fused_activation(*ctx.attrs, "BatchNormalization");  // rejects an unknown porta_activation
    const Shape& x = ctx.shape(0);
    if (x.size() < 2)
      throw ShapeError(str("[BatchNormalization] X must be N x C x ..., got ", shape_str(x)));
    static const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i)
      if (ctx.shape(i) != Shape{x[1]})
        throw ShapeError(str("[BatchNormalization] ", names[i], " must have shape ", x[1],
                             " (the channels of X ", shape_str(x), "), got ", shape_str(ctx.shape(i))));
    ctx.set_output(0, x, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Shape& sh = ctx.in(0).shape();
    int64_t n = sh[0], c = sh[1], inner = n * c == 0 ? 0 : ctx.in(0).numel() / (n * c);
    double eps = ctx.attrs->get_float("epsilon");
    const FusedActivation act = parse_fused_activation(*ctx.attrs, "BatchNormalization");
    const double *x = ctx.in(0).data<double>(), *scale = ctx.in(1).data<double>(),
                 *bias = ctx.in(2).data<double>(), *mean = ctx.in(3).data<double>(),
                 *var = ctx.in(4).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t at = (i * c + ch) * inner + j;
          y[at] = act((x[at] - mean[ch]) / std::sqrt(var[ch] + eps) * scale[ch] + bias[ch]);
        }
  };
  s.cases = [] {
    auto bn = [](Shape x) {
      int64_t c = x[1];
      return std::vector<InputSpec>{in(x), in({c}), in({c}), in({c}), in({c}, 0.1, 3.0)};
    };
    std::vector<OpCase> c;
    c.push_back({"nchw", bn({2, 3, 5, 7}), {}, kF32 | kF64});
    c.push_back({"nc", bn({4, 6}), {}, kF32 | kF64});
    c.push_back({"ncd", bn({3, 5, 9}), {{"epsilon", 1e-3}}, kF32 | kF64});
    c.push_back({"ncdhw", bn({1, 2, 3, 4, 5}), {}, kF32});
    c.push_back({"1x1", bn({1, 1, 1, 1}), {}, kF32 | kF64});
    c.push_back({"empty_n", bn({0, 3, 4}), {}, kF32});
    return c;
  };
  s.flops = flops_per_output_element(2);
  return s;
}

}  // namespace porta::opdef
