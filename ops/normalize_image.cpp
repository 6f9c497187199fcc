// NormalizeImage (ai.porta, version 1): uint8 image -> normalized float32 NCHW.
//   Y[n, c, h, w] = (X[n, c, h, w] / 255 - mean[c]) / std[c]
// X: u8, [N,C,H,W] (layout "NCHW", default) or [N,H,W,C] (layout "NHWC": Y is transposed to
// NCHW). mean, std (floats, required): one value per channel C; std values must be non-zero.
// Y: f32 [N,C,H,W].
#include "ops/custom_common.hpp"

namespace porta::opdef {
namespace {

// Channel count and layout after checking the attributes against X.
struct ImageLayout {
  bool nhwc = false;
  int64_t n = 0, c = 0, h = 0, w = 0;
};

ImageLayout layout_of(const Shape& x, const Attributes& a) {
  const std::string& layout = a.get_string("layout");
  if (layout != "NCHW" && layout != "NHWC")
    throw InvalidModel(str("[NormalizeImage] layout should be 'NCHW' or 'NHWC', got '", layout, "'"));
  if (x.size() != 4)
    throw ShapeError(str("[NormalizeImage] X should be 4-D (", layout, "), got ", shape_str(x)));
  ImageLayout l;
  l.nhwc = layout == "NHWC";
  l.n = x[0];
  l.c = l.nhwc ? x[3] : x[1];
  l.h = l.nhwc ? x[1] : x[2];
  l.w = l.nhwc ? x[2] : x[3];
  for (const char* name : {"mean", "std"}) {
    size_t got = a.get_floats(name).size();
    if (static_cast<int64_t>(got) != l.c)
      throw InvalidModel(str("[NormalizeImage] ", name, " should have one value per channel (", l.c, " for X ",
                             shape_str(x), " in ", layout, "), got ", got));
  }
  for (double s : a.get_floats("std"))
    if (s == 0) throw InvalidModel("[NormalizeImage] std values should be non-zero, got 0");
  return l;
}

}  // namespace

PORTA_REGISTER_OP(NormalizeImage) {
  OpSchema s;
  s.name = "NormalizeImage";
  s.domain = kPortaDomain;
  s.inputs = {"X"};
  s.outputs = {"Y"};
  s.attrs = {attr_required("mean", AttrType::Floats), attr_required("std", AttrType::Floats),
             attr_string("layout", "NCHW")};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kU8);
    ImageLayout l = layout_of(ctx.shape(0), *ctx.attrs);
    ctx.set_output(0, {l.n, l.c, l.h, l.w}, DType::f32);
  };
  s.reference = [](KernelContext& ctx) {
    ImageLayout l = layout_of(ctx.in(0).shape(), *ctx.attrs);
    std::vector<double> mean = ctx.attrs->get_floats("mean"), stdv = ctx.attrs->get_floats("std");
    const double* x = ctx.in(0).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t n = 0; n < l.n; ++n)
      for (int64_t c = 0; c < l.c; ++c)
        for (int64_t h = 0; h < l.h; ++h)
          for (int64_t w = 0; w < l.w; ++w) {
            int64_t src = l.nhwc ? ((n * l.h + h) * l.w + w) * l.c + c : ((n * l.c + c) * l.h + h) * l.w + w;
            y[((n * l.c + c) * l.h + h) * l.w + w] = (x[src] / 255.0 - mean[c]) / stdv[c];
          }
  };
  // Cast to f32, Transpose NHWC -> NCHW, Div by 255, Sub mean, Div std (per-channel constants
  // shaped [C,1,1] so they broadcast over H and W).
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    ImageLayout l = layout_of(b.shape(in[0]), a);
    ValueId x = b.add1("Cast", {in[0]}, {{"to", int64_t{1}}});
    if (l.nhwc) x = b.add1("Transpose", {x}, {{"perm", std::vector<int64_t>{0, 3, 1, 2}}});
    auto per_channel = [&](const char* name) {
      return b.constant(Tensor::from_values(a.get_floats(name), {l.c, 1, 1}, DType::f32));
    };
    x = b.add1("Div", {x, scalar_constant(b, 255.0, DType::f32)});
    x = b.add1("Sub", {x, per_channel("mean")});
    return std::vector<ValueId>{b.add1("Div", {x, per_channel("std")})};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    Attributes rgb{{"mean", std::vector<double>{0.485, 0.456, 0.406}}, {"std", std::vector<double>{0.229, 0.224, 0.225}}};
    Attributes rgb_nhwc = rgb;
    rgb_nhwc.set("layout", std::string("NHWC"));
    Attributes one{{"mean", std::vector<double>{0.5}}, {"std", std::vector<double>{0.25}}, {"layout", std::string("NHWC")}};
    Attributes five{{"mean", std::vector<double>{0.1, 0.2, 0.3, 0.4, 0.5}},
                    {"std", std::vector<double>{1, 2, 0.5, 0.3, -0.7}}};
    auto u8 = [](Shape s) { return in_typed(std::move(s), DType::u8, 0, 255); };
    c.push_back({"nchw", {u8({2, 3, 7, 9})}, rgb, kU8});
    c.push_back({"nhwc", {u8({2, 7, 9, 3})}, rgb_nhwc, kU8});
    c.push_back({"nhwc_one_channel", {u8({1, 5, 3, 1})}, one, kU8});
    c.push_back({"nchw_five_channels", {u8({1, 5, 11, 13})}, five, kU8});
    c.push_back({"one_pixel", {u8({1, 3, 1, 1})}, rgb, kU8});
    c.push_back({"empty", {u8({0, 3, 4, 4})}, rgb, kU8});
    OpCase big{"4096x4096_nchw", {u8({1, 3, 4096, 4096})}, rgb, kU8};
    big.perf = true;
    c.push_back(big);
    OpCase big_nhwc{"4096x4096_nhwc", {u8({1, 4096, 4096, 3})}, rgb_nhwc, kU8};
    big_nhwc.perf = true;
    c.push_back(big_nhwc);
    return c;
  };
  s.flops = flops_per_output_element(2);
  return s;
}

}  // namespace porta::opdef
