// Conv: N-d convolution (1-D, 2-D, 3-D) of X (N x C x spatial) with W (M x C/group x kernel),
// plus the optional bias B (M). Attributes: auto_pad, dilations, group, kernel_shape, pads,
// strides (see ops/window.hpp for the geometry).
// porta-internal attributes (not ONNX) `porta_activation` (string, default "" = none),
// `porta_activation_alpha` and `porta_activation_beta` (floats, default 0) make the op
// Act(Conv(...)) for one of the activations of ops/fused_activation.hpp ("Relu", "Clip",
// "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "Swish"; the floats carry
// Clip's bounds and the others' ONNX attributes); inference rejects any other name. Only
// porta's graph fusion (runtime/graph_fusion.hpp) sets them, and only for cpu sessions (the
// cpu kernel applies them as oneDNN post-ops, kernels/cpu/fused_activation.hpp; other
// backends' Conv kernels do not read them), so they have no conformance case here, which
// every backend would run; the reference applies them, and tests/graph_fusion_test.cpp,
// tests/activation_fusion_test.cpp and tests/fused_activation_test.cpp cover them.
// The porta-internal optional input 3, `porta_residual` (shaped like Y, X's dtype), is added to
// the convolution before the activation: Act(Conv(...) + residual). Graph fusion sets it for a
// Conv whose output feeds one Add (ResNet's shortcut) where the kernels declare it
// ("porta_residual" in KernelDef::fused_activations; tests/residual_fusion_test.cpp).
#include "ops/common.hpp"
#include "ops/fused_activation.hpp"
#include "ops/window.hpp"

namespace porta::opdef {
namespace {

WindowGeometry conv_geometry(const Shape& x, const Shape& w, const Attributes& a) {
  if (x.size() < 3 || x.size() > 5)
    throw ShapeError(str("[Conv] X must be N x C x (1 to 3 spatial axes), got ", shape_str(x)));
  if (w.size() != x.size())
    throw ShapeError(str("[Conv] weight ", shape_str(w), " must have the rank of X ", shape_str(x)));
  int64_t group = a.get_int("group");
  if (group < 1) throw ShapeError(str("[Conv] group must be >= 1, got ", group));
  if (w[1] * group != x[1])
    throw ShapeError(str("[Conv] weight has ", w[1] * group, " input channels", group > 1 ? str(" (", w[1], " x group ", group, ")") : "",
                         ", input has ", x[1], " (X ", shape_str(x), ", W ", shape_str(w), ")"));
  if (w[0] % group != 0)
    throw ShapeError(str("[Conv] output channels ", w[0], " (W ", shape_str(w), ") must divide by group ", group));
  std::vector<int64_t> k = kernel_shape("Conv", a, x.size() - 2, Shape(w.begin() + 2, w.end()));
  return window_geometry("Conv", x, k, a);
}

// Reference: direct loops; spatial axes are padded to three (size 1, stride 1, no pad).
void conv_reference(KernelContext& ctx) {
  const Shape &xs = ctx.in(0).shape(), &ws = ctx.in(1).shape();
  WindowGeometry g = conv_geometry(xs, ws, *ctx.attrs);
  while (g.in.size() < 3) {
    for (auto* v : {&g.in, &g.kernel, &g.strides, &g.dilations, &g.out}) v->insert(v->begin(), 1);
    g.pad_begin.insert(g.pad_begin.begin(), 0);
    g.pad_end.insert(g.pad_end.begin(), 0);
  }
  int64_t n = xs[0], c = xs[1], m = ws[0], group = ctx.attrs->get_int("group");
  int64_t cg = c / group, mg = m / group;
  const double *x = ctx.in(0).data<double>(), *w = ctx.in(1).data<double>();
  const double* b = ctx.has_input(2) ? ctx.in(2).data<double>() : nullptr;
  double* y = ctx.out(0).data<double>();
  const FusedActivation act = parse_fused_activation(*ctx.attrs);
  const double* residual = ctx.has_input(3) ? ctx.in(3).data<double>() : nullptr;
  int64_t ksize = g.kernel[0] * g.kernel[1] * g.kernel[2], isize = g.in[0] * g.in[1] * g.in[2];
  for (int64_t in = 0; in < n; ++in)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
          for (int64_t ow = 0; ow < g.out[2]; ++ow) {
            double acc = b ? b[oc] : 0.0;
            int64_t gi = oc / mg;
            for (int64_t ic = 0; ic < cg; ++ic)
              for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    int64_t id = od * g.strides[0] - g.pad_begin[0] + kd * g.dilations[0];
                    int64_t ih = oh * g.strides[1] - g.pad_begin[1] + kh * g.dilations[1];
                    int64_t iw = ow * g.strides[2] - g.pad_begin[2] + kw * g.dilations[2];
                    if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
                    double xv = x[(in * c + gi * cg + ic) * isize + (id * g.in[1] + ih) * g.in[2] + iw];
                    double wv = w[(oc * cg + ic) * ksize + (kd * g.kernel[1] + kh) * g.kernel[2] + kw];
                    acc += xv * wv;
                  }
            *y++ = act(residual ? acc + *residual++ : acc);
          }
}

}  // namespace

PORTA_REGISTER_OP(Conv) {
  OpSchema s;
  s.name = "Conv";
  s.inputs = {"X", "W", "B?", "porta_residual?"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("auto_pad", "NOTSET"), attr_optional("dilations", AttrType::Ints),
             attr_int("group", 1), attr_optional("kernel_shape", AttrType::Ints),
             attr_optional("pads", AttrType::Ints), attr_optional("strides", AttrType::Ints),
             attr_string("porta_activation", ""), attr_float("porta_activation_alpha", 0.0),
             attr_float("porta_activation_beta", 0.0)};
  s.infer = [](InferContext& ctx) {
    require_same_dtype(ctx);
    require_dtype(ctx, 0, kFloats);
    const Shape &x = ctx.shape(0), &w = ctx.shape(1);
    WindowGeometry g = conv_geometry(x, w, *ctx.attrs);
    parse_fused_activation(*ctx.attrs);  // rejects an unknown porta_activation
    if (ctx.has_input(2) && ctx.shape(2) != Shape{w[0]})
      throw ShapeError(str("[Conv] bias must have shape ", w[0], " (the output channels of W ", shape_str(w),
                           "), got ", shape_str(ctx.shape(2))));
    Shape y{x[0], w[0]};
    y.insert(y.end(), g.out.begin(), g.out.end());
    if (ctx.has_input(3) && ctx.shape(3) != y)
      throw ShapeError(str("[Conv] porta_residual must have the output's shape ", shape_str(y), ", got ",
                           shape_str(ctx.shape(3))));
    ctx.set_output(0, y, ctx.dtype(0));
  };
  s.reference = conv_reference;
  s.cases = [] {
    using A = Attributes;
    const DTypeSet f = kF32;
    std::vector<OpCase> c;
    c.push_back({"2d_plain", {in({2, 3, 7, 9}), in({4, 3, 3, 3}), in({4})}, {}, f});
    c.push_back({"2d_pads_no_bias", {in({1, 2, 6, 5}), in({3, 2, 3, 3}), in_absent()},
                 A{{"pads", std::vector<int64_t>{1, 0, 2, 1}}}, f});
    c.push_back({"2d_strides_dilations", {in({2, 3, 11, 10}), in({5, 3, 3, 2}), in({5})},
                 A{{"strides", std::vector<int64_t>{2, 3}}, {"dilations", std::vector<int64_t>{2, 1}},
                   {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, f});
    c.push_back({"2d_group", {in({1, 4, 6, 6}), in({6, 2, 3, 3}), in({6})}, A{{"group", int64_t{2}}}, f});
    c.push_back({"2d_depthwise", {in({2, 5, 8, 7}), in({5, 1, 3, 3}), in({5})},
                 A{{"group", int64_t{5}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, f});
    c.push_back({"2d_same_upper", {in({1, 2, 7, 8}), in({3, 2, 4, 3}), in_absent()},
                 A{{"auto_pad", std::string("SAME_UPPER")}, {"strides", std::vector<int64_t>{2, 2}}}, f});
    c.push_back({"2d_same_lower", {in({1, 2, 7, 8}), in({3, 2, 4, 3}), in_absent()},
                 A{{"auto_pad", std::string("SAME_LOWER")}, {"strides", std::vector<int64_t>{2, 2}}}, f});
    c.push_back({"2d_valid", {in({1, 2, 7, 8}), in({3, 2, 3, 3}), in({3})},
                 A{{"auto_pad", std::string("VALID")}, {"strides", std::vector<int64_t>{2, 1}}}, f});
    c.push_back({"2d_kernel_shape", {in({1, 1, 5, 5}), in({2, 1, 2, 2}), in({2})},
                 A{{"kernel_shape", std::vector<int64_t>{2, 2}}}, f});
    c.push_back({"2d_1x1", {in({1, 1, 1, 1}), in({1, 1, 1, 1}), in({1})}, {}, f});
    c.push_back({"2d_pointwise", {in({2, 8, 5, 3}), in({16, 8, 1, 1}), in({16})}, {}, f});
    // No input channels: every output is the bias (found by porta_fuzz_ops: oneDNN refuses it).
    c.push_back({"no_input_channels", {in({2, 0, 13}), in({4, 0, 5}), in({4})}, {}, kF32});
    c.push_back({"1d", {in({2, 3, 13}), in({4, 3, 5}), in({4})},
                 A{{"pads", std::vector<int64_t>{2, 1}}, {"strides", std::vector<int64_t>{2}}}, f});
    c.push_back({"1d_dilated_group", {in({1, 4, 15}), in({4, 2, 3}), in_absent()},
                 A{{"group", int64_t{2}}, {"dilations", std::vector<int64_t>{3}}}, f});
    c.push_back({"3d", {in({1, 2, 5, 6, 4}), in({3, 2, 3, 3, 2}), in({3})},
                 A{{"pads", std::vector<int64_t>{1, 1, 0, 1, 0, 1}}, {"strides", std::vector<int64_t>{1, 2, 1}}}, f});
    c.push_back({"empty_batch", {in({0, 3, 5, 5}), in({2, 3, 3, 3}), in({2})}, {}, f});
    // K = 12 channels x 9 taps = 108 per group: several K tiles (split over dispatches under a
    // test-forced driver loop cap, tests/vulkan_loop_cap_compute_test.cpp).
    c.push_back({"2d_group_long_k", {in({1, 24, 6, 5}), in({10, 12, 3, 3}), in({10})},
                 A{{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}, f});
    // Reductions of 64 * 9 = 576 products in f32 against f64: well under 1e-4 relative.
    OpCase big{"n32_c64_56x56_k3", {in({32, 64, 56, 56}), in({64, 64, 3, 3}), in({64})},
               A{{"pads", std::vector<int64_t>{1, 1, 1, 1}}}, f};
    big.perf = true;
    big.tolerance = 1e-4;
    c.push_back(big);
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>& outs, const Attributes&) {
    const Shape& w = ins[1];
    double per_out = 2.0;
    for (size_t i = 1; i < w.size(); ++i) per_out *= static_cast<double>(w[i]);
    return per_out * static_cast<double>(shape_numel(outs[0]));
  };
  return s;
}

}  // namespace porta::opdef
