// ConvTranspose: the gradient of Conv with respect to its input, as an op. X (N x C x spatial),
// W (C x M/group x kernel), optional B (M). Attributes: auto_pad, dilations, group,
// kernel_shape, output_padding, output_shape, pads, strides (geometry in ops/window.hpp).
#include "ops/common.hpp"
#include "ops/window.hpp"

namespace porta::opdef {
namespace {

WindowGeometry geometry(const Shape& x, const Shape& w, const Attributes& a) {
  if (x.size() < 3 || x.size() > 5)
    throw ShapeError(str("[ConvTranspose] X must be N x C x (1 to 3 spatial axes), got ", shape_str(x)));
  if (w.size() != x.size())
    throw ShapeError(str("[ConvTranspose] weight ", shape_str(w), " must have the rank of X ", shape_str(x)));
  int64_t group = a.get_int("group");
  if (group < 1) throw ShapeError(str("[ConvTranspose] group must be >= 1, got ", group));
  if (w[0] != x[1])
    throw ShapeError(str("[ConvTranspose] weight has ", w[0], " input channels, input has ", x[1], " (X ",
                         shape_str(x), ", W ", shape_str(w), ")"));
  if (x[1] % group != 0)
    throw ShapeError(str("[ConvTranspose] input channels ", x[1], " must divide by group ", group));
  std::vector<int64_t> k = kernel_shape("ConvTranspose", a, x.size() - 2, Shape(w.begin() + 2, w.end()));
  return transposed_geometry("ConvTranspose", x, k, a, nullptr);
}

// Reference: each input element scatters into the outputs its kernel window touches.
void reference(KernelContext& ctx) {
  const Shape &xs = ctx.in(0).shape(), &ws = ctx.in(1).shape();
  WindowGeometry g = geometry(xs, ws, *ctx.attrs);
  while (g.in.size() < 3) {
    for (auto* v : {&g.in, &g.kernel, &g.strides, &g.dilations, &g.out}) v->insert(v->begin(), 1);
    g.pad_begin.insert(g.pad_begin.begin(), 0);
  }
  int64_t n = xs[0], c = xs[1], group = ctx.attrs->get_int("group"), mg = ws[1], m = mg * group, cg = c / group;
  const double *x = ctx.in(0).data<double>(), *w = ctx.in(1).data<double>();
  double* y = ctx.out(0).data<double>();
  int64_t isize = g.in[0] * g.in[1] * g.in[2], osize = g.out[0] * g.out[1] * g.out[2];
  int64_t ksize = g.kernel[0] * g.kernel[1] * g.kernel[2];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t o = 0; o < osize; ++o) y[(b * m + oc) * osize + o] = ctx.has_input(2) ? ctx.in(2).data<double>()[oc] : 0.0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t id = 0; id < g.in[0]; ++id)
        for (int64_t ih = 0; ih < g.in[1]; ++ih)
          for (int64_t iw = 0; iw < g.in[2]; ++iw) {
            double xv = x[(b * c + ic) * isize + (id * g.in[1] + ih) * g.in[2] + iw];
            int64_t gi = ic / cg;
            for (int64_t oc = 0; oc < mg; ++oc)
              for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                    int64_t od = id * g.strides[0] + kd * g.dilations[0] - g.pad_begin[0];
                    int64_t oh = ih * g.strides[1] + kh * g.dilations[1] - g.pad_begin[1];
                    int64_t ow = iw * g.strides[2] + kw * g.dilations[2] - g.pad_begin[2];
                    if (od < 0 || od >= g.out[0] || oh < 0 || oh >= g.out[1] || ow < 0 || ow >= g.out[2]) continue;
                    double wv = w[(ic * mg + oc) * ksize + (kd * g.kernel[1] + kh) * g.kernel[2] + kw];
                    y[(b * m + gi * mg + oc) * osize + (od * g.out[1] + oh) * g.out[2] + ow] += xv * wv;
                  }
          }
}

}  // namespace

PORTA_REGISTER_OP(ConvTranspose) {
  OpSchema s;
  s.name = "ConvTranspose";
  s.inputs = {"X", "W", "B?"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("auto_pad", "NOTSET"), attr_optional("dilations", AttrType::Ints),
             attr_int("group", 1), attr_optional("kernel_shape", AttrType::Ints),
             attr_optional("output_padding", AttrType::Ints), attr_optional("output_shape", AttrType::Ints),
             attr_optional("pads", AttrType::Ints), attr_optional("strides", AttrType::Ints)};
  s.infer = [](InferContext& ctx) {
    require_same_dtype(ctx);
    require_dtype(ctx, 0, kFloats);
    const Shape &x = ctx.shape(0), &w = ctx.shape(1);
    WindowGeometry g = geometry(x, w, *ctx.attrs);
    int64_t m = w[1] * ctx.attrs->get_int("group");
    if (ctx.has_input(2) && ctx.shape(2) != Shape{m})
      throw ShapeError(str("[ConvTranspose] bias must have shape ", m, " (W ", shape_str(w), " x group), got ",
                           shape_str(ctx.shape(2))));
    Shape y{x[0], m};
    y.insert(y.end(), g.out.begin(), g.out.end());
    ctx.set_output(0, y, ctx.dtype(0));
  };
  s.reference = reference;
  s.cases = [] {
    using A = Attributes;
    using V = std::vector<int64_t>;
    std::vector<OpCase> c;
    c.push_back({"2d_plain", {in({2, 3, 5, 4}), in({3, 2, 3, 3}), in({2})}, {}, kF32});
    c.push_back({"2d_strides_pads", {in({1, 2, 4, 5}), in({2, 3, 3, 2}), in_absent()},
                 A{{"strides", V{2, 3}}, {"pads", V{1, 0, 1, 1}}}, kF32});
    c.push_back({"2d_output_padding", {in({1, 2, 3, 3}), in({2, 2, 3, 3}), in({2})},
                 A{{"strides", V{2, 2}}, {"output_padding", V{1, 1}}}, kF32});
    c.push_back({"2d_output_padding_pads", {in({1, 2, 3, 4}), in({2, 1, 3, 3}), in({1})},
                 A{{"strides", V{3, 2}}, {"pads", V{1, 1, 2, 0}}, {"output_padding", V{2, 1}}}, kF32});
    c.push_back({"2d_dilations", {in({1, 2, 4, 4}), in({2, 3, 2, 3}), in({3})}, A{{"dilations", V{2, 2}}}, kF32});
    c.push_back({"2d_group", {in({1, 4, 3, 5}), in({4, 3, 3, 3}), in({6})},
                 A{{"group", int64_t{2}}, {"strides", V{2, 1}}}, kF32});
    c.push_back({"2d_depthwise", {in({2, 3, 4, 4}), in({3, 1, 3, 3}), in({3})},
                 A{{"group", int64_t{3}}, {"pads", V{1, 1, 1, 1}}}, kF32});
    c.push_back({"2d_output_shape", {in({1, 1, 3, 3}), in({1, 2, 3, 3}), in_absent()},
                 A{{"strides", V{3, 2}}, {"output_shape", V{10, 8}}}, kF32});
    c.push_back({"2d_same_upper", {in({1, 2, 3, 4}), in({2, 2, 3, 3}), in({2})},
                 A{{"strides", V{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}, kF32});
    c.push_back({"2d_same_lower", {in({1, 2, 3, 4}), in({2, 2, 3, 3}), in({2})},
                 A{{"strides", V{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}, kF32});
    c.push_back({"2d_valid", {in({1, 2, 3, 3}), in({2, 2, 2, 2}), in_absent()},
                 A{{"auto_pad", std::string("VALID")}, {"strides", V{2, 2}}}, kF32});
    c.push_back({"1x1", {in({1, 1, 1, 1}), in({1, 1, 1, 1}), in({1})}, {}, kF32});
    c.push_back({"1d", {in({2, 3, 7}), in({3, 2, 4}), in({2})}, A{{"strides", V{3}}, {"pads", V{1, 2}}}, kF32});
    // No input channels: every output is the bias (found by porta_fuzz_ops: oneDNN refuses it).
    c.push_back({"no_input_channels", {in({2, 0, 7}), in({0, 2, 4}), in({2})}, A{{"strides", V{3}}}, kF32});
    c.push_back({"3d", {in({1, 2, 3, 2, 3}), in({2, 2, 2, 3, 2}), in({2})}, A{{"strides", V{2, 1, 2}}}, kF32});
    c.push_back({"empty_batch", {in({0, 2, 3, 3}), in({2, 2, 3, 3}), in({2})}, {}, kF32});
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>&, const Attributes&) {
    double per_in = 2.0;
    for (size_t i = 1; i < ins[1].size(); ++i) per_in *= static_cast<double>(ins[1][i]);
    return per_in * static_cast<double>(shape_numel(ins[0]));
  };
  return s;
}

}  // namespace porta::opdef
