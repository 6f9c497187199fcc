// Reshape, Flatten, Squeeze, Unsqueeze: same elements in the same order, another shape.
// Output 0 may alias input 0 (alias_input0); the kernels still copy when called eagerly.
#include <algorithm>

#include "ops/common.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {
namespace {

// Reference shared by the four ops: the elements, unchanged, in C order.
void copy_reference(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::copy_n(x.data<double>(), x.numel(), ctx.out(0).data<double>());
}

// Shape-deciding values as int64 for inference; these inputs must be i64 in ONNX (i32 is
// accepted too because int_values reads both).
std::vector<int64_t> axes_from(const InferContext& ctx, size_t i) {
  if (ctx.has_input(i)) return ctx.int_values(i);
  return ctx.attrs->get_ints("axes", {});
}

}  // namespace

PORTA_REGISTER_OP(Reshape) {
  OpSchema s;
  s.name = "Reshape";
  s.inputs = {"data", "shape"};
  s.outputs = {"reshaped"};
  s.attrs = {attr_int("allowzero", 0)};
  s.host_inputs = {1};
  s.alias_input0 = true;
  s.infer = [](InferContext& ctx) {
    Shape out = reshape_target(ctx.shape(0), ctx.int_values(1), ctx.attrs->get_int("allowzero") != 0,
                               "Reshape");
    ctx.set_output(0, out, ctx.dtype(0));
  };
  s.reference = copy_reference;
  s.cases = [] {
    auto shape = [](std::vector<double> v) { return in_values({static_cast<int64_t>(v.size())}, DType::i64, v); };
    std::vector<OpCase> c;
    c.push_back({"infer_minus1", {in({2, 3, 4}), shape({4, -1})}, {}, kAllTypes});
    c.push_back({"copy_zero", {in({2, 3, 5}), shape({0, 15})}, {}, kF32 | kI64});
    c.push_back({"to_scalar", {in({1, 1}), in_values({0}, DType::i64, {})}, {}, kF32});
    c.push_back({"from_scalar", {in({}), shape({1, 1, 1})}, {}, kF32});
    c.push_back({"empty", {in({0, 3}), shape({3, -1, 1})}, {}, kF32});
    c.push_back({"allowzero", {in({0, 3}), shape({3, 0})}, {{"allowzero", int64_t{1}}}, kF32 | kU8});
    c.push_back({"odd", {in({7, 1, 3}), shape({-1})}, {}, kF16 | kBool | kI8});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Flatten) {
  OpSchema s;
  s.name = "Flatten";
  s.inputs = {"input"};
  s.outputs = {"output"};
  s.attrs = {attr_int("axis", 1)};
  s.alias_input0 = true;
  s.infer = [](InferContext& ctx) {
    ctx.set_output(0, flatten_shape(ctx.shape(0), ctx.attrs->get_int("axis"), "Flatten"), ctx.dtype(0));
  };
  s.reference = copy_reference;
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"default", {in({2, 3, 4})}, {}, kAllTypes});
    c.push_back({"axis0", {in({3, 5})}, {{"axis", int64_t{0}}}, kF32});
    c.push_back({"axis_end", {in({3, 5, 2})}, {{"axis", int64_t{3}}}, kF32});
    c.push_back({"negative", {in({3, 1, 5, 2})}, {{"axis", int64_t{-2}}}, kF32 | kBF16});
    c.push_back({"empty", {in({2, 0, 3})}, {{"axis", int64_t{2}}}, kF32});
    c.push_back({"scalar", {in({})}, {{"axis", int64_t{0}}}, kF64});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Squeeze) {
  OpSchema s;
  s.name = "Squeeze";
  s.inputs = {"data", "axes?"};
  s.outputs = {"squeezed"};
  s.attrs = {attr_optional("axes", AttrType::Ints)};  // before opset 13
  s.host_inputs = {1};
  s.alias_input0 = true;
  s.infer = [](InferContext& ctx) {
    ctx.set_output(0, squeeze_shape(ctx.shape(0), axes_from(ctx, 1), "Squeeze"), ctx.dtype(0));
  };
  s.reference = copy_reference;
  s.cases = [] {
    auto axes = [](std::vector<double> v) { return in_values({static_cast<int64_t>(v.size())}, DType::i64, v); };
    std::vector<OpCase> c;
    c.push_back({"all_ones", {in({1, 3, 1, 5}), in_absent()}, {}, kAllTypes});
    c.push_back({"axes", {in({1, 3, 1, 5}), axes({2})}, {}, kF32});
    c.push_back({"negative", {in({3, 1, 5, 1}), axes({-1, 1})}, {}, kF32 | kI32});
    c.push_back({"to_scalar", {in({1, 1}), in_absent()}, {}, kF32});
    c.push_back({"empty", {in({0, 1, 2}), axes({1})}, {}, kF32});
    c.push_back({"attr", {in({1, 4})}, {{"axes", std::vector<int64_t>{0}}}, kF32});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Unsqueeze) {
  OpSchema s;
  s.name = "Unsqueeze";
  s.inputs = {"data", "axes?"};
  s.outputs = {"expanded"};
  s.attrs = {attr_optional("axes", AttrType::Ints)};  // before opset 13
  s.host_inputs = {1};
  s.alias_input0 = true;
  s.infer = [](InferContext& ctx) {
    ctx.set_output(0, unsqueeze_shape(ctx.shape(0), axes_from(ctx, 1), "Unsqueeze"), ctx.dtype(0));
  };
  s.reference = copy_reference;
  s.cases = [] {
    auto axes = [](std::vector<double> v) { return in_values({static_cast<int64_t>(v.size())}, DType::i64, v); };
    std::vector<OpCase> c;
    c.push_back({"front", {in({3, 4}), axes({0})}, {}, kAllTypes});
    c.push_back({"several", {in({3, 5}), axes({0, 4, 2})}, {}, kF32});
    c.push_back({"negative", {in({3, 5}), axes({-1})}, {}, kF32 | kF16});
    c.push_back({"scalar", {in({}), axes({0})}, {}, kF32});
    c.push_back({"empty", {in({0, 2}), axes({1})}, {}, kF32});
    c.push_back({"attr", {in({4})}, {{"axes", std::vector<int64_t>{1}}}, kF32});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
