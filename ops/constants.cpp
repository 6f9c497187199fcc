// Shape (with opset 15's start/end), Constant (value / value_float / value_floats /
// value_int / value_ints) and ConstantOfShape (value tensor, default f32 0).
#include <algorithm>

#include "ops/common.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {
namespace {

// The tensor a Constant node holds, whichever attribute carries it.
Tensor constant_value(const Attributes& a) {
  std::vector<std::string> given;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints",
                           "sparse_value", "value_string", "value_strings"})
    if (a.has(name)) given.push_back(name);
  if (given.size() != 1) {
    std::string names;
    for (auto& g : given) names += (names.empty() ? "" : ", ") + g;
    throw InvalidModel(str("[Constant] expected exactly one value attribute, got ", given.size(),
                           given.empty() ? "" : " (" + names + ")"));
  }
  const std::string& n = given[0];
  if (n == "value") return a.get_tensor("value");
  if (n == "value_float") return Tensor::scalar(a.get_float(n), DType::f32);
  if (n == "value_int") return Tensor::scalar(static_cast<double>(a.get_int(n)), DType::i64);
  if (n == "value_floats") {
    std::vector<double> v = a.get_floats(n);
    return Tensor::from_values(v, {static_cast<int64_t>(v.size())}, DType::f32);
  }
  if (n == "value_ints") {
    // Through bytes, not doubles: int64 values beyond 2^53 must survive.
    std::vector<int64_t> v = a.get_ints(n);
    return Tensor::from_host(v.data(), {static_cast<int64_t>(v.size())}, DType::i64);
  }
  throw Unsupported(str("[Constant] expected a dense numeric value, got attribute '", n, "'"));
}

void fill_reference(KernelContext& ctx, const std::vector<double>& values) {
  double* y = ctx.out(0).data<double>();
  std::copy(values.begin(), values.end(), y);
}

}  // namespace

PORTA_REGISTER_OP(Shape) {
  OpSchema s;
  s.name = "Shape";
  s.inputs = {"data"};
  s.outputs = {"shape"};
  s.attrs = {attr_int("start", 0), attr_optional("end", AttrType::Int)};
  s.infer = [](InferContext& ctx) {
    auto [start, end] = shape_range(*ctx.attrs, static_cast<int64_t>(ctx.shape(0).size()));
    ctx.set_output(0, {end - start}, DType::i64);
  };
  s.reference = [](KernelContext& ctx) {
    auto [start, end] = shape_range(*ctx.attrs, ctx.in(0).rank());
    fill_reference(ctx, std::vector<double>(ctx.in(0).shape().begin() + start, ctx.in(0).shape().begin() + end));
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"full", {in({2, 3, 5})}, {}, kAllTypes});
    c.push_back({"start", {in({2, 3, 5})}, {{"start", int64_t{1}}}, kF32});
    c.push_back({"start_end_negative", {in({2, 3, 5, 7})}, {{"start", int64_t{-3}}, {"end", int64_t{-1}}}, kF32});
    c.push_back({"clamped", {in({2, 3})}, {{"start", int64_t{-10}}, {"end", int64_t{10}}}, kF32});
    c.push_back({"empty_range", {in({2, 3})}, {{"start", int64_t{2}}, {"end", int64_t{1}}}, kF32});
    c.push_back({"scalar", {in({})}, {}, kF32});
    c.push_back({"empty", {in({0, 4})}, {}, kF32});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Constant) {
  OpSchema s;
  s.name = "Constant";
  s.outputs = {"output"};
  s.attrs = {attr_optional("value", AttrType::TensorValue), attr_optional("value_float", AttrType::Float),
             attr_optional("value_floats", AttrType::Floats), attr_optional("value_int", AttrType::Int),
             attr_optional("value_ints", AttrType::Ints), attr_optional("sparse_value", AttrType::TensorValue),
             attr_optional("value_string", AttrType::String), attr_optional("value_strings", AttrType::Strings)};
  s.dispatch_input = -1;
  s.infer = [](InferContext& ctx) {
    Tensor v = constant_value(*ctx.attrs);
    ctx.set_output(0, v.shape(), v.dtype());
  };
  s.reference = [](KernelContext& ctx) { fill_reference(ctx, constant_value(*ctx.attrs).to_doubles()); };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"value_tensor", {}, {{"value", Tensor::from_values({1.5, -2, 3, 4.25, 0, 7}, {2, 3}, DType::f32)}}, kF32});
    c.push_back({"value_tensor_i8", {}, {{"value", Tensor::from_values({1, -2, 3}, {3}, DType::i8)}}, kF32});
    c.push_back({"value_tensor_bool", {}, {{"value", Tensor::from_values({1, 0}, {2}, DType::boolean)}}, kF32});
    c.push_back({"value_tensor_empty", {}, {{"value", Tensor::from_values({}, {0, 2}, DType::f16)}}, kF32});
    c.push_back({"value_float", {}, {{"value_float", 2.5}}, kF32});
    c.push_back({"value_floats", {}, {{"value_floats", std::vector<double>{1.0, -0.5, 3.25}}}, kF32});
    c.push_back({"value_int", {}, {{"value_int", int64_t{-7}}}, kF32});
    c.push_back({"value_ints", {}, {{"value_ints", std::vector<int64_t>{4, 0, -3, 1 << 30}}}, kF32});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(ConstantOfShape) {
  OpSchema s;
  s.name = "ConstantOfShape";
  s.inputs = {"input"};
  s.outputs = {"output"};
  s.attrs = {attr_optional("value", AttrType::TensorValue)};
  s.host_inputs = {0};
  s.dispatch_input = -1;
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kI64 | kI32);
    std::vector<int64_t> shape = ctx.int_values(0);
    for (int64_t d : shape)
      if (d < 0) throw ShapeError(str("[ConstantOfShape] expected dims >= 0, got ", shape_str(shape)));
    DType dt = DType::f32;
    if (ctx.attrs->has("value")) {
      const Tensor& v = ctx.attrs->get_tensor("value");
      if (v.numel() != 1)
        throw ShapeError(str("[ConstantOfShape] expected a one-element value, got ", v.describe()));
      dt = v.dtype();
    }
    ctx.set_output(0, shape, dt);
  };
  s.reference = [](KernelContext& ctx) {
    double v = ctx.attrs->has("value") ? ctx.attrs->get_tensor("value").to_doubles()[0] : 0.0;
    std::fill_n(ctx.out(0).data<double>(), ctx.out(0).numel(), v);
  };
  s.cases = [] {
    auto v = [](std::vector<double> x) { return in_values({static_cast<int64_t>(x.size())}, DType::i64, x); };
    std::vector<OpCase> c;
    c.push_back({"default_zero", {v({2, 3})}, {}, kI64});
    c.push_back({"f32_value", {v({3, 1, 5})}, {{"value", Tensor::scalar(1.25, DType::f32)}}, kI64});
    c.push_back({"i64_value", {v({4})}, {{"value", Tensor::from_values({-3}, {1}, DType::i64)}}, kI64});
    c.push_back({"bool_value", {v({2, 2})}, {{"value", Tensor::from_values({1}, {1}, DType::boolean)}}, kI64});
    c.push_back({"f16_value", {v({5})}, {{"value", Tensor::from_values({0.5}, {1}, DType::f16)}}, kI64});
    c.push_back({"scalar", {in_values({0}, DType::i64, {})}, {{"value", Tensor::scalar(9, DType::i32)}}, kI64});
    c.push_back({"empty", {v({3, 0})}, {}, kI64});
    return c;
  };
  return s;
}

}  // namespace porta::opdef
