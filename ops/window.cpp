// porta ops — sliding-window geometry (see window.hpp).
#include "ops/window.hpp"

#include <algorithm>

#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta::opdef {
namespace {

std::vector<int64_t> per_axis(std::string_view op, const Attributes& a, const char* name, size_t n,
                              int64_t fallback, size_t count_factor = 1) {
  std::vector<int64_t> v = a.has(name) ? a.get_ints(name) : std::vector<int64_t>{};
  if (v.empty()) return std::vector<int64_t>(n * count_factor, fallback);
  if (v.size() != n * count_factor)
    throw ShapeError(str("[", op, "] ", name, " has ", v.size(), " values, expected ", n * count_factor,
                         count_factor == 2 ? str(" (", n, " spatial axes x begin/end)") : str(" (one per spatial axis)")));
  return v;
}

void require_positive(std::string_view op, const char* name, const std::vector<int64_t>& v) {
  for (int64_t x : v)
    if (x < 1) throw ShapeError(str("[", op, "] ", name, " must be >= 1, got ", shape_str(v)));
}

WindowGeometry base(std::string_view op, const Shape& x, const std::vector<int64_t>& kernel, const Attributes& a) {
  if (x.size() < 3)
    throw ShapeError(str("[", op, "] input must be N x C x spatial..., got ", shape_str(x)));
  size_t n = x.size() - 2;
  if (kernel.size() != n)
    throw ShapeError(str("[", op, "] kernel has ", kernel.size(), " spatial axes, input ",
                         shape_str(x), " has ", n));
  WindowGeometry g;
  g.in.assign(x.begin() + 2, x.end());
  g.kernel = kernel;
  g.strides = per_axis(op, a, "strides", n, 1);
  g.dilations = per_axis(op, a, "dilations", n, 1);
  require_positive(op, "kernel_shape", g.kernel);
  require_positive(op, "strides", g.strides);
  require_positive(op, "dilations", g.dilations);
  std::vector<int64_t> pads = per_axis(op, a, "pads", n, 0, 2);
  for (int64_t p : pads)
    if (p < 0) throw ShapeError(str("[", op, "] pads must be >= 0, got ", shape_str(pads)));
  g.pad_begin.assign(pads.begin(), pads.begin() + n);
  g.pad_end.assign(pads.begin() + n, pads.end());
  g.out.resize(n);
  return g;
}

std::string auto_pad_of(std::string_view op, const Attributes& a) {
  std::string s = a.get_string("auto_pad", "NOTSET");
  if (s != "NOTSET" && s != "SAME_UPPER" && s != "SAME_LOWER" && s != "VALID")
    throw InvalidModel(str("[", op, "] auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '", s, "'"));
  return s;
}

}  // namespace

std::vector<int64_t> kernel_shape(std::string_view op, const Attributes& a, size_t spatial,
                                  const std::vector<int64_t>& from_weight) {
  std::vector<int64_t> k = a.has("kernel_shape") ? a.get_ints("kernel_shape") : from_weight;
  if (k.size() != spatial)
    throw ShapeError(str("[", op, "] kernel_shape has ", k.size(), " values, expected ", spatial,
                         " (one per spatial axis)"));
  if (!from_weight.empty() && k != from_weight)
    throw ShapeError(str("[", op, "] kernel_shape ", shape_str(k), " differs from the weight's spatial size ",
                         shape_str(from_weight)));
  return k;
}

WindowGeometry window_geometry(std::string_view op, const Shape& x, const std::vector<int64_t>& kernel,
                               const Attributes& a, bool ceil_mode) {
  WindowGeometry g = base(op, x, kernel, a);
  std::string auto_pad = auto_pad_of(op, a);
  for (size_t i = 0; i < g.spatial(); ++i) {
    int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      g.out[i] = (g.in[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total = std::max<int64_t>(0, (g.out[i] - 1) * g.strides[i] + extent - g.in[i]);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
    int64_t span = g.in[i] + g.pad_begin[i] + g.pad_end[i] - extent;
    if (span < 0)
      throw ShapeError(str("[", op, "] window of ", extent, " (kernel ", g.kernel[i], ", dilation ",
                           g.dilations[i], ") is larger than spatial axis ", i, " of input ", shape_str(x),
                           " with its padding (", g.in[i] + g.pad_begin[i] + g.pad_end[i], ")"));
    g.out[i] = (ceil_mode ? (span + g.strides[i] - 1) / g.strides[i] : span / g.strides[i]) + 1;
    if (ceil_mode && (g.out[i] - 1) * g.strides[i] >= g.in[i] + g.pad_begin[i]) --g.out[i];
  }
  return g;
}

WindowGeometry transposed_geometry(std::string_view op, const Shape& x, const std::vector<int64_t>& kernel,
                                   const Attributes& a, std::vector<int64_t>* output_padding) {
  WindowGeometry g = base(op, x, kernel, a);
  size_t n = g.spatial();
  std::vector<int64_t> opad = per_axis(op, a, "output_padding", n, 0);
  for (size_t i = 0; i < n; ++i)
    if (opad[i] < 0 || (opad[i] >= g.strides[i] && opad[i] >= g.dilations[i]))
      throw ShapeError(str("[", op, "] output_padding ", shape_str(opad),
                           " must be >= 0 and smaller than the stride or the dilation (strides ",
                           shape_str(g.strides), ")"));
  std::string auto_pad = auto_pad_of(op, a);
  std::vector<int64_t> out_shape = a.has("output_shape") ? a.get_ints("output_shape") : std::vector<int64_t>{};
  if (out_shape.size() == x.size()) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != n)
    throw ShapeError(str("[", op, "] output_shape has ", out_shape.size(), " values, expected ", n,
                         " (one per spatial axis)"));
  if (out_shape.empty() && (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER"))
    for (size_t i = 0; i < n; ++i) out_shape.push_back(g.in[i] * g.strides[i]);
  for (size_t i = 0; i < n; ++i) {
    int64_t full = g.strides[i] * (g.in[i] - 1) + opad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (auto_pad == "VALID") g.pad_begin[i] = g.pad_end[i] = 0;
    if (!out_shape.empty()) {
      // A requested size beyond what the input reaches is allowed (as in ONNX's own tests and
      // ONNX Runtime): no padding, and the extra trailing outputs hold only the bias.
      int64_t total = std::max<int64_t>(0, full - out_shape[i]);
      g.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
      g.out[i] = out_shape[i];
      continue;
    }
    g.out[i] = full - g.pad_begin[i] - g.pad_end[i];
    if (g.out[i] < 0)
      throw ShapeError(str("[", op, "] pads ", g.pad_begin[i], "+", g.pad_end[i], " exceed the ", full,
                           " outputs of spatial axis ", i, " (input ", shape_str(x), ")"));
  }
  if (output_padding) *output_padding = opad;
  return g;
}

std::optional<TapRange> input_taps(const WindowGeometry& g) {
  TapRange r;
  bool cut = false;
  for (size_t i = 0; i < g.spatial(); ++i) {
    const int64_t s = g.strides[i], d = g.dilations[i], taps = g.kernel[i];
    int64_t first = -1, last = -1;
    for (int64_t k = 0; k < taps; ++k) {
      // Output o reads input o*s - pad_begin + k*d: inside [0, in) for o in [o_lo, o_hi].
      const int64_t shift = g.pad_begin[i] - k * d;
      const int64_t top = g.in[i] - 1 + shift;
      if (top < 0) continue;
      const int64_t o_lo = shift <= 0 ? 0 : (shift + s - 1) / s;
      const int64_t o_hi = std::min(g.out[i] - 1, top / s);
      if (o_lo > o_hi) continue;
      if (first < 0) first = k;
      last = k;
    }
    if (first < 0) return std::nullopt;
    if (g.pad_begin[i] - first * d < 0 || g.pad_end[i] - (taps - 1 - last) * d < 0) return std::nullopt;
    cut |= first > 0 || last < taps - 1;
    r.first.push_back(first);
    r.last.push_back(last);
  }
  if (!cut) return std::nullopt;
  return r;
}

}  // namespace porta::opdef
