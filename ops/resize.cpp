// Resize (opsets 13-18 as torch's F.interpolate / nn.Upsample export them): inputs X, roi
// (tf_crop_and_resize only), scales, sizes — exactly one of scales and sizes non-empty.
// Modes nearest / linear / cubic over any axes, coordinate transforms half_pixel,
// pytorch_half_pixel, align_corners, asymmetric and tf_crop_and_resize, the four nearest
// roundings, cubic_coeff_a, exclude_outside, extrapolation_value. Opset 18's antialias, axes
// and keep_aspect_ratio_policy are refused (Unsupported) unless default.
//
// Coordinates follow the formulas of ONNX's node-test generator (onnx/backend/test/case/node/
// resize.py): length_resized is in * scale for scales (not the floored output length), and
// out / in is the scale for sizes. Two choices where that generator and the spec differ:
// pytorch_half_pixel with length_resized 1 maps to 0 (the spec; the generator says -0.5, which
// gives the same result for nearest and linear), and the output length is floor of the
// product computed in float32 (as onnxruntime does: a float32 scale 0.7 on 10 gives 7, as in
// torch, where the double product would give 6).
#include <cmath>
#include <functional>

#include "ops/common.hpp"
#include "ops/reference_util.hpp"
#include "ops/resize_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {

ResizeAttrs resize_attrs(const Attributes& attrs) {
  ResizeAttrs a;
  std::string mode = attrs.get_string("mode", "nearest");
  if (mode == "nearest") a.mode = ResizeAttrs::Mode::nearest;
  else if (mode == "linear") a.mode = ResizeAttrs::Mode::linear;
  else if (mode == "cubic") a.mode = ResizeAttrs::Mode::cubic;
  else throw InvalidArgument(str("[Resize] expected mode nearest, linear or cubic, got '", mode, "'"));
  std::string coord = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel") a.coord = ResizeAttrs::Coord::half_pixel;
  else if (coord == "pytorch_half_pixel") a.coord = ResizeAttrs::Coord::pytorch_half_pixel;
  else if (coord == "align_corners") a.coord = ResizeAttrs::Coord::align_corners;
  else if (coord == "asymmetric") a.coord = ResizeAttrs::Coord::asymmetric;
  else if (coord == "tf_crop_and_resize") a.coord = ResizeAttrs::Coord::tf_crop_and_resize;
  else if (coord == "tf_half_pixel_for_nn" || coord == "half_pixel_symmetric")
    throw Unsupported(str("[Resize] expected coordinate_transformation_mode half_pixel, pytorch_half_pixel, "
                          "align_corners, asymmetric or tf_crop_and_resize, got '", coord,
                          "' (opset 11 / opset 19 only; not supported)"));
  else
    throw InvalidArgument(str("[Resize] expected coordinate_transformation_mode half_pixel, pytorch_half_pixel, "
                              "align_corners, asymmetric or tf_crop_and_resize, got '", coord, "'"));
  std::string nearest = attrs.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") a.nearest = ResizeAttrs::Nearest::round_prefer_floor;
  else if (nearest == "round_prefer_ceil") a.nearest = ResizeAttrs::Nearest::round_prefer_ceil;
  else if (nearest == "floor") a.nearest = ResizeAttrs::Nearest::floor;
  else if (nearest == "ceil") a.nearest = ResizeAttrs::Nearest::ceil;
  else
    throw InvalidArgument(str("[Resize] expected nearest_mode round_prefer_floor, round_prefer_ceil, floor or "
                              "ceil, got '", nearest, "'"));
  a.cubic_a = attrs.get_float("cubic_coeff_a", -0.75);
  a.exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
  a.extrapolation = attrs.get_float("extrapolation_value", 0.0);
  if (attrs.get_int("antialias", 0) != 0)
    throw Unsupported("[Resize] expected antialias 0 (opset 18's antialias is not supported), got 1");
  if (attrs.has("axes"))
    throw Unsupported("[Resize] expected no axes attribute (opset 18's axes is not supported), got one");
  std::string policy = attrs.get_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    throw Unsupported(str("[Resize] expected keep_aspect_ratio_policy 'stretch' (opset 18's other policies are "
                          "not supported), got '", policy, "'"));
  return a;
}

ResizeGeometry resize_geometry(const Shape& in, const std::vector<double>& roi, const std::vector<double>& scales,
                               const std::vector<int64_t>& sizes, bool has_scales, bool has_sizes,
                               const ResizeAttrs& a) {
  const size_t r = in.size();
  if (r == 0) throw ShapeError("[Resize] expected X of rank 1 or more, got a scalar");
  if (has_scales && has_sizes)
    throw InvalidArgument("[Resize] expected exactly one of scales and sizes, got both (non-empty)");
  if (!has_scales && !has_sizes)
    throw InvalidArgument("[Resize] expected exactly one of scales and sizes, got neither (both absent or empty)");
  ResizeGeometry g;
  g.out.resize(r);
  g.scale.resize(r);
  g.length.resize(r);
  g.roi_start.assign(r, 0.0);
  g.roi_end.assign(r, 1.0);
  if (a.coord == ResizeAttrs::Coord::tf_crop_and_resize) {
    if (roi.size() != 2 * r)
      throw ShapeError(str("[Resize] expected roi with 2 * rank = ", 2 * r,
                           " values for tf_crop_and_resize, got ", roi.size()));
    for (size_t i = 0; i < r; ++i) g.roi_start[i] = roi[i], g.roi_end[i] = roi[r + i];
  }
  if (has_scales) {
    if (scales.size() != r)
      throw ShapeError(str("[Resize] expected ", r, " scales (one per axis of X ", shape_str(in), "), got ",
                           scales.size()));
    for (size_t i = 0; i < r; ++i) {
      double s = scales[i];
      if (!(s > 0) || !std::isfinite(s))
        throw ShapeError(str("[Resize] expected positive finite scales, got ", s, " for axis ", i));
      double extent = g.roi_end[i] - g.roi_start[i];
      float product = static_cast<float>(in[i]) * static_cast<float>(extent) * static_cast<float>(s);
      g.out[i] = static_cast<int64_t>(std::floor(static_cast<double>(product)));
      if (g.out[i] < 0) g.out[i] = 0;
      g.scale[i] = s;
      g.length[i] = static_cast<double>(in[i]) * extent * s;
    }
  } else {
    if (sizes.size() != r)
      throw ShapeError(str("[Resize] expected ", r, " sizes (one per axis of X ", shape_str(in), "), got ",
                           sizes.size()));
    for (size_t i = 0; i < r; ++i) {
      if (sizes[i] < 0) throw ShapeError(str("[Resize] expected sizes >= 0, got ", sizes[i], " for axis ", i));
      if (in[i] == 0 && sizes[i] != 0)
        throw ShapeError(str("[Resize] expected size 0 for the empty axis ", i, " of X ", shape_str(in), ", got ",
                             sizes[i]));
      g.out[i] = sizes[i];
      g.scale[i] = in[i] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(in[i]);
      g.length[i] = static_cast<double>(sizes[i]);
    }
  }
  return g;
}

ResizeAxis resize_axis(const ResizeGeometry& g, size_t axis, int64_t in, const ResizeAttrs& a) {
  using C = ResizeAttrs::Coord;
  ResizeAxis ax;
  ax.in = in;
  ax.out = g.out[axis];
  ax.taps = a.mode == ResizeAttrs::Mode::nearest ? 1 : a.mode == ResizeAttrs::Mode::linear ? 2 : 4;
  ax.index.assign(static_cast<size_t>(ax.out * ax.taps), 0);
  ax.weight.assign(static_cast<size_t>(ax.out * ax.taps), 0.0);
  ax.outside.assign(static_cast<size_t>(ax.out), 0);
  const double scale = g.scale[axis], len = g.length[axis], n = static_cast<double>(in);
  const double start = g.roi_start[axis], end = g.roi_end[axis];
  const double A = a.cubic_a;
  ax.identity = ax.out == in;
  for (int64_t o = 0; o < ax.out; ++o) {
    const double x = static_cast<double>(o);
    double xo = 0.0;
    switch (a.coord) {
      case C::half_pixel: xo = (x + 0.5) / scale - 0.5; break;
      case C::pytorch_half_pixel: xo = len > 1 ? (x + 0.5) / scale - 0.5 : 0.0; break;
      case C::align_corners: xo = len == 1 ? 0.0 : x * (n - 1) / (len - 1); break;
      case C::asymmetric: xo = x / scale; break;
      case C::tf_crop_and_resize:
        xo = len == 1 ? (end - start) * (n - 1) / 2 : x * (end - start) * (n - 1) / (len - 1);
        xo += start * (n - 1);
        if (xo < 0 || xo > n - 1) {
          ax.outside[o] = 1;
          ax.any_outside = true;
          ax.identity = false;
          continue;
        }
        break;
    }
    const double fl = std::floor(xo);
    const int64_t x0 = static_cast<int64_t>(fl);
    const double t = xo - fl;
    int64_t* idx = &ax.index[static_cast<size_t>(o * ax.taps)];
    double* w = &ax.weight[static_cast<size_t>(o * ax.taps)];
    if (a.mode == ResizeAttrs::Mode::nearest) {
      int64_t i = x0;
      if (t != 0) {
        switch (a.nearest) {
          case ResizeAttrs::Nearest::round_prefer_floor: i = t <= 0.5 ? x0 : x0 + 1; break;
          case ResizeAttrs::Nearest::round_prefer_ceil: i = t < 0.5 ? x0 : x0 + 1; break;
          case ResizeAttrs::Nearest::floor: i = x0; break;
          case ResizeAttrs::Nearest::ceil: i = x0 + 1; break;
        }
      }
      idx[0] = i;
      w[0] = 1.0;
    } else if (a.mode == ResizeAttrs::Mode::linear) {
      idx[0] = x0, idx[1] = x0 + 1;
      w[0] = 1 - t, w[1] = t;
    } else {
      const double u = 1 - t;
      for (int k = 0; k < 4; ++k) idx[k] = x0 - 1 + k;
      w[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
      w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
      w[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
      w[3] = ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A;
    }
    if (a.exclude_outside && a.mode != ResizeAttrs::Mode::nearest) {
      double sum = 0;
      for (int k = 0; k < ax.taps; ++k) {
        if (idx[k] < 0 || idx[k] >= in) w[k] = 0;
        sum += w[k];
      }
      if (sum != 0)
        for (int k = 0; k < ax.taps; ++k) w[k] /= sum;
    }
    for (int k = 0; k < ax.taps; ++k) {
      idx[k] = std::clamp<int64_t>(idx[k], 0, in - 1);
      if (w[k] != 0 && (idx[k] != o || w[k] != 1)) ax.identity = false;
    }
  }
  return ax;
}

namespace {

bool present_nonempty(const KernelContext& ctx, size_t i) { return ctx.has_input(i) && ctx.in(i).numel() > 0; }

ResizeGeometry kernel_geometry(const KernelContext& ctx, const ResizeAttrs& a) {
  const Shape& in = ctx.in(0).shape();
  bool has_scales = present_nonempty(ctx, 2), has_sizes = present_nonempty(ctx, 3);
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
  if (a.coord == ResizeAttrs::Coord::tf_crop_and_resize && ctx.has_input(1)) roi = ctx.in(1).to_doubles();
  if (has_scales) scales = ctx.in(2).to_doubles();
  if (has_sizes) {
    if (!ctx.outputs.empty()) {
      sizes = ctx.outputs[0].shape();  // the inferred output shape holds them: no device read
    } else {
      for (double v : ctx.in(3).to_doubles()) sizes.push_back(static_cast<int64_t>(v));
    }
  }
  return resize_geometry(in, roi, scales, sizes, has_scales, has_sizes, a);
}

}  // namespace

ResizePlan resize_plan(const KernelContext& ctx) {
  ResizeAttrs a = resize_attrs(*ctx.attrs);
  const Shape& in = ctx.in(0).shape();
  ResizeGeometry g = kernel_geometry(ctx, a);
  std::vector<int64_t> strides = contiguous_strides(in);
  ResizePlan p;
  p.extrapolation = a.extrapolation;
  for (size_t i = 0; i < in.size(); ++i) {
    ResizeAxis ax = resize_axis(g, i, in[i], a);
    if (ax.identity) {
      if (!p.axes.empty() && p.axes.back().taps == 0) {
        p.axes.back().out *= ax.out;
        p.axes.back().in_stride = strides[i];
      } else {
        p.axes.push_back({ax.out, strides[i], 0, 0});
      }
      continue;
    }
    ResizePlan::Axis pa{ax.out, strides[i], ax.taps, static_cast<int64_t>(p.index.size())};
    for (int64_t o = 0; o < ax.out; ++o)
      for (int k = 0; k < ax.taps; ++k) {
        size_t e = static_cast<size_t>(o * ax.taps + k);
        p.index.push_back(ax.outside[o] ? -1 : ax.index[e] * strides[i]);
        p.weight.push_back(ax.outside[o] ? 0.0 : ax.weight[e]);
      }
    p.combos *= ax.taps;
    p.axes.push_back(pa);
  }
  return p;
}

PORTA_REGISTER_OP(Resize) {
  OpSchema s;
  s.name = "Resize";
  s.inputs = {"X", "roi?", "scales?", "sizes?"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("mode", "nearest"),
             attr_string("coordinate_transformation_mode", "half_pixel"),
             attr_string("nearest_mode", "round_prefer_floor"),
             attr_float("cubic_coeff_a", -0.75),
             attr_int("exclude_outside", 0),
             attr_float("extrapolation_value", 0.0),
             attr_int("antialias", 0),
             attr_optional("axes", AttrType::Ints),
             attr_string("keep_aspect_ratio_policy", "stretch")};
  s.host_inputs = {1, 2, 3};
  s.infer = [](InferContext& ctx) {
    ResizeAttrs a = resize_attrs(*ctx.attrs);
    if (!dtype_in(kFloats, ctx.dtype(0)))
      throw DTypeError(str("[Resize] expected X of a float dtype (f32, f64, f16, bf16), got ",
                           dtype_name(ctx.dtype(0))));
    bool has_scales = ctx.has_input(2) && shape_numel(ctx.shape(2)) > 0;
    bool has_sizes = ctx.has_input(3) && shape_numel(ctx.shape(3)) > 0;
    std::vector<double> roi, scales;
    std::vector<int64_t> sizes;
    if (has_scales) {
      if (!dtype_in(kFloats, ctx.dtype(2)))
        throw DTypeError(str("[Resize] expected scales of a float dtype, got ", dtype_name(ctx.dtype(2))));
      scales = ctx.value(2).to_doubles();
    }
    if (has_sizes) {
      if (ctx.dtype(3) != DType::i64 && ctx.dtype(3) != DType::i32)
        throw DTypeError(str("[Resize] expected sizes of dtype i64, got ", dtype_name(ctx.dtype(3))));
      sizes = ctx.int_values(3);
    }
    if (a.coord == ResizeAttrs::Coord::tf_crop_and_resize) {
      if (!ctx.has_input(1))
        throw ShapeError("[Resize] expected a roi input for tf_crop_and_resize, got none");
      if (!dtype_in(kFloats, ctx.dtype(1)))
        throw DTypeError(str("[Resize] expected roi of a float dtype, got ", dtype_name(ctx.dtype(1))));
      roi = ctx.value(1).to_doubles();
    }
    ResizeGeometry g = resize_geometry(ctx.shape(0), roi, scales, sizes, has_scales, has_sizes, a);
    ctx.set_output(0, g.out, ctx.dtype(0));
  };
  // Plain: per output element, the product of each axis's taps (a weighted sum over every
  // combination of source indexes), or the extrapolation value when any axis is outside.
  s.reference = [](KernelContext& ctx) {
    ResizeAttrs a = resize_attrs(*ctx.attrs);
    const Tensor& x = ctx.in(0);
    Tensor& y = ctx.out(0);
    bool has_scales = ctx.has_input(2) && ctx.in(2).numel() > 0;
    bool has_sizes = ctx.has_input(3) && ctx.in(3).numel() > 0;
    std::vector<double> roi, scales;
    std::vector<int64_t> sizes;
    if (a.coord == ResizeAttrs::Coord::tf_crop_and_resize) roi = ctx.in(1).to_doubles();
    if (has_scales) scales = ctx.in(2).to_doubles();
    if (has_sizes)
      for (double v : ctx.in(3).to_doubles()) sizes.push_back(static_cast<int64_t>(v));
    ResizeGeometry g = resize_geometry(x.shape(), roi, scales, sizes, has_scales, has_sizes, a);
    const size_t r = x.shape().size();
    std::vector<ResizeAxis> axes;
    for (size_t i = 0; i < r; ++i) axes.push_back(resize_axis(g, i, x.shape()[i], a));
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    std::vector<int64_t> src_idx(r);
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      double& out = dst[linear_offset(y.shape(), idx)];
      for (size_t i = 0; i < r; ++i)
        if (axes[i].outside[idx[i]]) {
          out = a.extrapolation;
          return;
        }
      double sum = 0;
      std::function<void(size_t, double)> visit = [&](size_t i, double w) {
        if (i == r) {
          sum += w * src[linear_offset(x.shape(), src_idx)];
          return;
        }
        for (int k = 0; k < axes[i].taps; ++k) {
          size_t e = static_cast<size_t>(idx[i] * axes[i].taps + k);
          src_idx[i] = axes[i].index[e];
          visit(i + 1, w * axes[i].weight[e]);
        }
      };
      visit(0, 1.0);
      out = sum;
    });
  };
  s.cases = [] {
    auto f32s = [](std::vector<double> v) { return in_values({static_cast<int64_t>(v.size())}, DType::f32, v); };
    auto i64s = [](std::vector<double> v) { return in_values({static_cast<int64_t>(v.size())}, DType::i64, v); };
    auto attrs = [](std::string mode, std::string coord, std::string nearest = "round_prefer_floor") {
      return Attributes{{"mode", mode}, {"coordinate_transformation_mode", coord}, {"nearest_mode", nearest}};
    };
    const DTypeSet all = kF32 | kF16 | kF64;
    InputSpec none = in_absent();
    std::vector<OpCase> c;
    // nn.Upsample(mode='nearest') / F.interpolate(mode='nearest'): asymmetric + floor.
    c.push_back({"nearest_upsample2_torch", {in({2, 3, 5, 7}), none, f32s({1, 1, 2, 2})},
                 attrs("nearest", "asymmetric", "floor"), all});
    c.push_back({"nearest_torch_noninteger", {in({1, 3, 7, 6}), none, f32s({1, 1, 1.5, 0.6})},
                 attrs("nearest", "asymmetric", "floor"), all});
    c.push_back({"nearest_half_pixel_down", {in({1, 2, 9, 7}), none, f32s({1, 1, 0.6, 0.45})},
                 attrs("nearest", "half_pixel"), kF32 | kF16});
    c.push_back({"nearest_round_prefer_ceil_asymmetric", {in({1, 1, 4, 5}), none, none, i64s({1, 1, 8, 11})},
                 attrs("nearest", "asymmetric", "round_prefer_ceil"), kF32});
    c.push_back({"nearest_ceil_half_pixel_sizes", {in({2, 3, 4}), none, none, i64s({2, 7, 9})},
                 attrs("nearest", "half_pixel", "ceil"), kF32 | kF16});
    c.push_back({"nearest_floor_align_corners", {in({1, 1, 3, 4}), none, none, i64s({1, 1, 8, 7})},
                 attrs("nearest", "align_corners", "floor"), kF32});
    c.push_back({"nearest_3d_sizes", {in({2, 5, 7}), none, none, i64s({2, 11, 3})},
                 attrs("nearest", "asymmetric", "floor"), kF32 | kF16});
    c.push_back({"nearest_5d", {in({1, 2, 3, 4, 5}), none, f32s({1, 1, 2, 1.5, 0.6})},
                 attrs("nearest", "asymmetric", "floor"), all});
    c.push_back({"nearest_batch_axis", {in({3, 2, 4}), none, f32s({2, 1, 1})},
                 attrs("nearest", "asymmetric", "floor"), kF32});
    // F.interpolate(mode='bilinear', align_corners=False) exports pytorch_half_pixel.
    c.push_back({"linear_half_pixel_up2", {in({2, 3, 6, 5}), none, f32s({1, 1, 2, 2})},
                 attrs("linear", "half_pixel"), all});
    c.push_back({"linear_pytorch_half_pixel_noninteger", {in({1, 2, 7, 9}), none, f32s({1, 1, 1.5, 1.7})},
                 attrs("linear", "pytorch_half_pixel"), all});
    c.push_back({"linear_half_pixel_down", {in({1, 3, 11, 10}), none, f32s({1, 1, 0.45, 0.7})},
                 attrs("linear", "half_pixel"), kF32 | kF16});
    c.push_back({"linear_align_corners_sizes", {in({1, 2, 5, 6}), none, none, i64s({1, 2, 9, 11})},
                 attrs("linear", "align_corners"), all});
    c.push_back({"linear_align_corners_down", {in({1, 2, 5, 8}), none, f32s({1, 1, 0.6, 0.75})},
                 attrs("linear", "align_corners"), kF32});
    c.push_back({"linear_asymmetric", {in({1, 1, 4, 6}), none, f32s({1, 1, 2.5, 1.5})},
                 attrs("linear", "asymmetric"), kF32});
    c.push_back({"linear_pytorch_half_pixel_size1", {in({1, 2, 4, 5}), none, none, i64s({1, 2, 1, 3})},
                 attrs("linear", "pytorch_half_pixel"), kF32 | kF16});
    c.push_back({"linear_5d_trilinear", {in({1, 2, 3, 4, 5}), none, f32s({1, 1, 2, 2, 2})},
                 attrs("linear", "half_pixel"), kF32 | kF16});
    c.push_back({"linear_1d", {in({7}), none, f32s({1.5})}, attrs("linear", "half_pixel"), kF32});
    c.push_back({"linear_size1_input", {in({1, 1, 1, 1}), none, f32s({1, 1, 3, 2})},
                 attrs("linear", "half_pixel"), kF32});
    // F.interpolate(mode='bicubic', align_corners=False): cubic + pytorch_half_pixel, a=-0.75.
    c.push_back({"cubic_half_pixel", {in({1, 2, 6, 7}), none, f32s({1, 1, 2, 1.5})},
                 attrs("cubic", "half_pixel"), all});
    c.push_back({"cubic_pytorch_half_pixel_odd", {in({3, 5, 7, 9}), none, f32s({1, 1, 1.3, 0.7})},
                 attrs("cubic", "pytorch_half_pixel"), kF32 | kF16});
    c.push_back({"cubic_pytorch_half_pixel_size1", {in({1, 2, 4, 5}), none, none, i64s({1, 2, 1, 1})},
                 attrs("cubic", "pytorch_half_pixel"), kF32});
    c.push_back({"cubic_align_corners_sizes", {in({1, 1, 4, 5}), none, none, i64s({1, 1, 9, 7})},
                 attrs("cubic", "align_corners"), kF32 | kF64});
    c.push_back({"cubic_asymmetric", {in({1, 1, 5, 4}), none, f32s({1, 1, 2, 2})},
                 attrs("cubic", "asymmetric"), kF32});
    {
      Attributes a = attrs("cubic", "half_pixel");
      a.set("cubic_coeff_a", -0.5);
      a.set("exclude_outside", int64_t{1});
      c.push_back({"cubic_a05_exclude_outside_down", {in({1, 2, 8, 9}), none, f32s({1, 1, 0.8, 0.7})}, a,
                   kF32 | kF64});
      c.push_back({"cubic_a05_exclude_outside_up", {in({1, 1, 4, 4}), none, f32s({1, 1, 2, 2})}, a, kF32});
    }
    {
      Attributes a = attrs("linear", "tf_crop_and_resize");
      a.set("extrapolation_value", 10.0);
      c.push_back({"tf_crop_and_resize_extrapolation",
                   {in({1, 2, 5, 6}), f32s({0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7}), none, i64s({1, 2, 3, 4})}, a, kF32});
      c.push_back({"tf_crop_and_resize_cubic",
                   {in({1, 1, 6, 6}), f32s({0, 0, 0.2, 0.1, 1, 1, 0.9, 0.7}), none, i64s({1, 1, 5, 4})},
                   attrs("cubic", "tf_crop_and_resize"), kF32});
    }
    c.push_back({"empty_batch", {in({0, 3, 4, 4}), none, f32s({1, 1, 2, 2})}, attrs("linear", "half_pixel"), kF32});
    c.push_back({"to_empty_axis", {in({1, 1, 4, 5}), none, f32s({1, 1, 0.2, 1})}, attrs("linear", "half_pixel"), kF32});
    c.push_back({"empty_sizes", {in({2, 0, 3}), none, none, i64s({2, 0, 5})}, attrs("nearest", "half_pixel"), kF32});
    // A segmentation head's upsampling to the image (lraspp, deeplabv3, fcn): many planes,
    // 8x along both image axes.
    c.push_back({"linear_segmentation_upsample8", {in({1, 21, 8, 8}), none, none, i64s({1, 21, 64, 64})},
                 attrs("linear", "half_pixel"), kF32});
    // More than 65536 output elements (grids over x and y on vulkan).
    c.push_back({"large_bilinear", {in({1, 3, 100, 120}), none, f32s({1, 1, 2, 2})},
                 attrs("linear", "pytorch_half_pixel"), kF32 | kF16});
    c.push_back({"large_nearest", {in({2, 4, 64, 70}), none, f32s({1, 1, 2, 2})},
                 attrs("nearest", "asymmetric", "floor"), kF32});
    return c;
  };
  s.flops = [](const std::vector<Shape>&, const std::vector<Shape>& outputs, const Attributes& attrs) {
    std::string mode = attrs.get_string("mode", "nearest");
    double per = mode == "cubic" ? 32 : mode == "linear" ? 8 : 0;
    return outputs.empty() ? 0.0 : per * static_cast<double>(shape_numel(outputs[0]));
  };
  return s;
}

}  // namespace porta::opdef
