// MaxPool (with the optional Indices output) and AveragePool. Window geometry: ops/window.hpp;
// divisors: ops/pool.hpp. Indices are flat positions in X (N x C x spatial), row major, or
// with the spatial axes column major when storage_order = 1.
#include "ops/pool.hpp"

#include <cmath>

#include "ops/common.hpp"

namespace porta::opdef {

WindowGeometry pool_geometry(std::string_view op, const Shape& x, const Attributes& a) {
  if (!a.has("kernel_shape")) throw InvalidModel(str("[", op, "] the kernel_shape attribute is required"));
  if (x.size() < 3) throw ShapeError(str("[", op, "] X must be N x C x spatial..., got ", shape_str(x)));
  std::vector<int64_t> k = kernel_shape(op, a, x.size() - 2, {});
  return window_geometry(op, x, k, a, a.get_int("ceil_mode", 0) != 0);
}

int64_t pool_taps(const WindowGeometry& g, size_t i, int64_t o, bool include_pad) {
  int64_t lo = include_pad ? -g.pad_begin[i] : 0, hi = include_pad ? g.in[i] + g.pad_end[i] : g.in[i];
  int64_t taps = 0;
  for (int64_t k = 0; k < g.kernel[i]; ++k) {
    int64_t at = o * g.strides[i] - g.pad_begin[i] + k * g.dilations[i];
    taps += at >= lo && at < hi;
  }
  return taps;
}

namespace {

void infer_pool(InferContext& ctx) {
  // MaxPool also takes 8-bit integers (ONNX opset 12); an average needs a float.
  require_dtype(ctx, 0, ctx.op->name == std::string_view("MaxPool") ? kFloats | kI8 | kU8 : kFloats);
  WindowGeometry g = pool_geometry(ctx.op->name, ctx.shape(0), *ctx.attrs);
  Shape y{ctx.shape(0)[0], ctx.shape(0)[1]};
  y.insert(y.end(), g.out.begin(), g.out.end());
  ctx.set_output(0, y, ctx.dtype(0));
  ctx.set_output(1, y, DType::i64);
}

// Reference over every output: the window's taps are visited in row-major kernel order.
void reference_pool(KernelContext& ctx, bool max) {
  const Shape& xs = ctx.in(0).shape();
  WindowGeometry g = pool_geometry(ctx.op->name, xs, *ctx.attrs);
  size_t n = g.spatial();
  bool include_pad = !max && ctx.attrs->get_int("count_include_pad", 0) != 0;
  bool column_major = max && ctx.attrs->get_int("storage_order", 0) != 0;
  int64_t planes = xs[0] * xs[1], isize = shape_numel(g.in), osize = shape_numel(g.out), ksize = shape_numel(g.kernel);
  const double* x = ctx.in(0).data<double>();
  double* y = ctx.out(0).data<double>();
  double* idx = ctx.outputs.size() > 1 && ctx.out(1).defined() ? ctx.out(1).data<double>() : nullptr;
  std::vector<int64_t> o(n), k(n);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oi = 0; oi < osize; ++oi) {
      for (size_t i = n, r = oi; i-- > 0; r /= g.out[i]) o[i] = static_cast<int64_t>(r) % g.out[i];
      double acc = max ? -INFINITY : 0.0;
      int64_t best = -1;
      for (int64_t ki = 0; ki < ksize; ++ki) {
        for (size_t i = n, r = ki; i-- > 0; r /= g.kernel[i]) k[i] = static_cast<int64_t>(r) % g.kernel[i];
        int64_t flat = 0, flat_cm = 0, stride_cm = 1;
        bool inside = true;
        for (size_t i = 0; i < n; ++i) {
          int64_t at = o[i] * g.strides[i] - g.pad_begin[i] + k[i] * g.dilations[i];
          inside &= at >= 0 && at < g.in[i];
          flat = flat * g.in[i] + at;
        }
        if (!inside) continue;
        for (size_t i = 0; i < n; ++i) {  // the same position with spatial axes reversed
          flat_cm += (o[i] * g.strides[i] - g.pad_begin[i] + k[i] * g.dilations[i]) * stride_cm;
          stride_cm *= g.in[i];
        }
        double v = x[p * isize + flat];
        if (!max) acc += v;
        else if (v > acc || best < 0) acc = v, best = p * isize + (column_major ? flat_cm : flat);
      }
      if (!max) {
        int64_t taps = 1;
        for (size_t i = 0; i < n; ++i) taps *= pool_taps(g, i, o[i], include_pad);
        acc /= static_cast<double>(taps);
      }
      y[p * osize + oi] = acc;
      if (idx) idx[p * osize + oi] = static_cast<double>(best);
    }
}

std::vector<OpCase> pool_cases(bool max) {
  using A = Attributes;
  using V = std::vector<int64_t>;
  std::vector<OpCase> c;
  const DTypeSet f = kF32 | kF64;
  c.push_back({"2d", {in({2, 3, 7, 8})}, A{{"kernel_shape", V{3, 3}}}, f});
  c.push_back({"2d_strides_pads", {in({1, 2, 9, 8})},
               A{{"kernel_shape", V{3, 2}}, {"strides", V{2, 2}}, {"pads", V{1, 0, 1, 1}}}, f});
  c.push_back({"2d_ceil", {in({1, 2, 8, 7})},
               A{{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"ceil_mode", int64_t{1}}}, f});
  c.push_back({"2d_ceil_pads", {in({1, 1, 6, 7})},
               A{{"kernel_shape", V{2, 3}}, {"strides", V{2, 3}}, {"pads", V{1, 1, 1, 1}}, {"ceil_mode", int64_t{1}}}, f});
  c.push_back({"2d_same_upper", {in({1, 2, 7, 6})},
               A{{"kernel_shape", V{3, 2}}, {"strides", V{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}, f});
  c.push_back({"2d_same_lower", {in({1, 2, 7, 6})},
               A{{"kernel_shape", V{3, 2}}, {"strides", V{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}, f});
  c.push_back({"2d_valid", {in({1, 2, 7, 6})},
               A{{"kernel_shape", V{2, 2}}, {"strides", V{2, 2}}, {"auto_pad", std::string("VALID")}}, f});
  c.push_back({"1d", {in({2, 3, 11})}, A{{"kernel_shape", V{4}}, {"strides", V{3}}, {"pads", V{1, 2}}}, f});
  c.push_back({"3d", {in({1, 2, 5, 6, 4})}, A{{"kernel_shape", V{2, 3, 2}}, {"strides", V{1, 2, 2}}}, f});
  c.push_back({"1x1", {in({1, 1, 1, 1})}, A{{"kernel_shape", V{1, 1}}}, f});
  c.push_back({"empty_batch", {in({0, 2, 4, 4})}, A{{"kernel_shape", V{2, 2}}}, kF32});
  if (max) {
    // 8-bit images, as ONNX's test_maxpool_2d_uint8; padded taps never win.
    c.push_back({"2d_8bit", {in({2, 3, 7, 6}, -100, 250)},
                 A{{"kernel_shape", V{3, 3}}, {"strides", V{2, 1}}, {"pads", V{1, 1, 1, 1}}}, kU8 | kI8});
    OpCase ind8{"indices_8bit", {in({1, 2, 5, 5}, 0, 3)}, A{{"kernel_shape", V{2, 2}}, {"strides", V{1, 1}}}, kU8};
    ind8.num_outputs = 2;
    c.push_back(ind8);
    c.push_back({"2d_dilations", {in({1, 2, 9, 9})},
                 A{{"kernel_shape", V{3, 2}}, {"dilations", V{2, 3}}, {"pads", V{1, 1, 1, 1}}}, f});
    OpCase ind{"indices", {in({2, 3, 7, 6})}, A{{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, f};
    ind.num_outputs = 2;
    c.push_back(ind);
    OpCase cm{"indices_column_major", {in({1, 2, 5, 6})},
              A{{"kernel_shape", V{2, 2}}, {"storage_order", int64_t{1}}, {"ceil_mode", int64_t{1}}, {"strides", V{2, 2}}}, f};
    cm.num_outputs = 2;
    c.push_back(cm);
  } else {
    c.push_back({"2d_include_pad", {in({1, 2, 6, 7})},
                 A{{"kernel_shape", V{3, 3}}, {"pads", V{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}}, f});
    c.push_back({"2d_include_pad_ceil", {in({1, 2, 6, 7})},
                 A{{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}},
                   {"count_include_pad", int64_t{1}}, {"ceil_mode", int64_t{1}}}, f});
  }
  return c;
}

OpSchema pool_schema(const char* name, bool max) {
  OpSchema s;
  s.name = name;
  s.inputs = {"X"};
  s.outputs = max ? std::vector<std::string>{"Y", "Indices?"} : std::vector<std::string>{"Y"};
  s.attrs = {attr_string("auto_pad", "NOTSET"), attr_int("ceil_mode", 0),
             attr_optional("dilations", AttrType::Ints), attr_required("kernel_shape", AttrType::Ints),
             attr_optional("pads", AttrType::Ints), attr_optional("strides", AttrType::Ints)};
  s.attrs.push_back(max ? attr_int("storage_order", 0) : attr_int("count_include_pad", 0));
  s.infer = infer_pool;
  s.reference = [max](KernelContext& ctx) { reference_pool(ctx, max); };
  s.cases = [max] { return pool_cases(max); };
  s.flops = [](const std::vector<Shape>&, const std::vector<Shape>& outs, const Attributes& a) {
    return static_cast<double>(shape_numel(outs[0])) * static_cast<double>(shape_numel(a.get_ints("kernel_shape")));
  };
  return s;
}

}  // namespace

PORTA_REGISTER_OP(MaxPool) { return pool_schema("MaxPool", true); }
PORTA_REGISTER_OP(AveragePool) { return pool_schema("AveragePool", false); }

}  // namespace porta::opdef
