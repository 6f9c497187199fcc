// Pad (opset 13): `pads` input holds begins then ends per axis (negative pads crop);
// mode constant (optional constant_value input, default 0), reflect or edge. The opset 18
// `axes` input is not supported (Unsupported error when given).
#include "ops/common.hpp"
#include "ops/reference_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Pad) {
  OpSchema s;
  s.name = "Pad";
  s.inputs = {"data", "pads", "constant_value?", "axes?"};
  s.outputs = {"output"};
  s.attrs = {attr_string("mode", "constant")};
  s.host_inputs = {1};
  s.host_read_inputs = {2};
  s.infer = [](InferContext& ctx) {
    if (ctx.has_input(3))
      throw Unsupported("[Pad] expected no axes input (opset 18's axes is not supported), got one");
    require_dtype(ctx, 1, kI64 | kI32);
    if (ctx.has_input(2)) {
      if (ctx.dtype(2) != ctx.dtype(0))
        throw DTypeError(str("[Pad] expected constant_value of the data's dtype ", dtype_name(ctx.dtype(0)),
                             ", got ", dtype_name(ctx.dtype(2))));
      if (shape_numel(ctx.shape(2)) != 1)
        throw ShapeError(str("[Pad] expected a one-element constant_value, got shape ", shape_str(ctx.shape(2))));
    }
    ctx.set_output(0, pad_shape(ctx.shape(0), ctx.int_values(1), ctx.attrs->get_string("mode"), "Pad"),
                   ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor &x = ctx.in(0), &y = ctx.out(0);
    std::vector<int64_t> pads = tensor_ints(ctx.in(1));
    std::string mode = ctx.attrs->get_string("mode");
    double value = ctx.has_input(2) ? ctx.in(2).data<double>()[0] : 0.0;
    const double* src = x.data<double>();
    double* dst = y.data<double>();
    std::vector<int64_t> src_idx(x.shape().size());
    for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
      bool inside = true;
      for (size_t i = 0; i < idx.size(); ++i) {
        src_idx[i] = pad_source_index(idx[i], pads[i], x.shape()[i], mode);
        inside &= src_idx[i] >= 0;
      }
      dst[linear_offset(y.shape(), idx)] = inside ? src[linear_offset(x.shape(), src_idx)] : value;
    });
  };
  s.cases = [] {
    auto v = [](std::vector<double> x) { return in_values({static_cast<int64_t>(x.size())}, DType::i64, x); };
    Attributes reflect{{"mode", std::string("reflect")}}, edge{{"mode", std::string("edge")}};
    std::vector<OpCase> c;
    c.push_back({"constant_zero", {in({3, 4}), v({1, 0, 2, 3})}, {}, kAllTypes});
    c.push_back({"constant_value", {in({2, 3, 5}), v({0, 1, 2, 1, 0, 3}), in({}, 5, 7)}, {}, kF32 | kF16 | kI64});
    c.push_back({"crop", {in({4, 6}), v({-1, 2, 0, -3})}, {}, kF32});
    c.push_back({"reflect", {in({4, 5}), v({3, 1, 2, 4})}, reflect, kF32 | kI32 | kBF16});
    c.push_back({"edge", {in({3, 2, 4}), v({2, 0, 1, 1, 3, 5})}, edge, kF32 | kU8 | kBool});
    // Swin's window padding of a channels-last map (only H and W padded, at the end); reflect
    // and edge on outer axes with the innermost axis untouched (block copies of input rows).
    c.push_back({"window_pad_channels_last", {in({1, 5, 6, 8}), v({0, 0, 0, 0, 0, 2, 1, 0})}, {}, kF32 | kF16});
    c.push_back({"reflect_outer_axes", {in({3, 4, 5}), v({1, 2, 0, 1, 1, 0})}, reflect, kF32});
    c.push_back({"edge_outer_axes_crop_inner", {in({2, 3, 6}), v({1, 1, -2, 0, 2, -1})}, edge, kF32});
    c.push_back({"reflect_1d", {in({7}), v({6, 6})}, reflect, kF32});
    c.push_back({"edge_size1", {in({1, 1}), v({2, 3, 1, 0})}, edge, kF32});
    c.push_back({"empty_input", {in({0, 3}), v({1, 1, 2, 0}), in({}, 1, 3)}, {}, kF32});
    c.push_back({"scalar", {in({}), in_values({0}, DType::i64, {})}, {}, kF32});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
