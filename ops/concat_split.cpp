// Concat (variadic inputs joined along `axis`) and Split (one input cut along `axis` into as
// many outputs as the node has: sizes from the optional `split` input, else equal parts).
#include "ops/common.hpp"
#include "ops/reference_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(Concat) {
  OpSchema s;
  s.name = "Concat";
  s.inputs = {"inputs..."};
  s.outputs = {"concat_result"};
  s.attrs = {attr_required("axis", AttrType::Int)};
  s.infer = [](InferContext& ctx) {
    require_same_dtype(ctx);
    std::vector<Shape> shapes;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) shapes.push_back(ctx.shape(i));
    ctx.set_output(0, concat_shape(shapes, ctx.attrs->get_int("axis"), "Concat"), ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& y = ctx.out(0);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), y.rank(), "Concat");
    int64_t base = 0;
    for (const Tensor& x : ctx.inputs) {
      const double* src = x.data<double>();
      double* dst = y.data<double>();
      for_each_index(x.shape(), [&](const std::vector<int64_t>& idx) {
        std::vector<int64_t> o = idx;
        o[axis] += base;
        dst[linear_offset(y.shape(), o)] = src[linear_offset(x.shape(), idx)];
      });
      base += x.shape()[axis];
    }
  };
  s.cases = [] {
    std::vector<OpCase> c;
    c.push_back({"axis0", {in({2, 3}), in({4, 3})}, {{"axis", int64_t{0}}}, kAllTypes});
    c.push_back({"axis1_three", {in({2, 3}), in({2, 1}), in({2, 5})}, {{"axis", int64_t{1}}}, kF32 | kF16});
    c.push_back({"negative_axis", {in({3, 2, 5}), in({3, 3, 5})}, {{"axis", int64_t{-2}}}, kF32 | kI64});
    c.push_back({"one_input", {in({4, 5})}, {{"axis", int64_t{1}}}, kF32});
    c.push_back({"with_empty", {in({0, 3}), in({2, 3}), in({0, 3})}, {{"axis", int64_t{0}}}, kF32});
    c.push_back({"size1", {in({1}), in({1})}, {{"axis", int64_t{0}}}, kF32 | kBool});
    OpCase big{"4096x4096", {in({4096, 4096}), in({4096, 4096})}, {{"axis", int64_t{1}}}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Split) {
  OpSchema s;
  s.name = "Split";
  s.inputs = {"input", "split?"};
  s.outputs = {"outputs..."};
  // num_outputs (opset 18) is optional: the node's output count decides.
  s.attrs = {attr_int("axis", 0), attr_optional("num_outputs", AttrType::Int),
             attr_optional("split", AttrType::Ints)};  // split attribute: before opset 13
  s.host_inputs = {1};
  s.infer = [](InferContext& ctx) {
    size_t n = ctx.outputs.size();
    if (ctx.attrs->has("num_outputs") && ctx.attrs->get_int("num_outputs") != static_cast<int64_t>(n))
      throw ShapeError(str("[Split] expected num_outputs to equal the node's ", n, " outputs, got ",
                           ctx.attrs->get_int("num_outputs")));
    std::vector<int64_t> split = ctx.has_input(1) ? ctx.int_values(1) : ctx.attrs->get_ints("split", {});
    int64_t axis = ctx.attrs->get_int("axis");
    std::vector<int64_t> sizes = split_sizes(ctx.shape(0), axis, split, n, "Split");
    int64_t a = normalize_axis(axis, static_cast<int64_t>(ctx.shape(0).size()), "Split");
    for (size_t i = 0; i < n; ++i) {
      Shape out = ctx.shape(0);
      out[a] = sizes[i];
      ctx.set_output(i, out, ctx.dtype(0));
    }
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    int64_t axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Split");
    const double* src = x.data<double>();
    int64_t base = 0;
    for (Tensor& y : ctx.outputs) {
      double* dst = y.data<double>();
      for_each_index(y.shape(), [&](const std::vector<int64_t>& idx) {
        std::vector<int64_t> i = idx;
        i[axis] += base;
        dst[linear_offset(y.shape(), idx)] = src[linear_offset(x.shape(), i)];
      });
      base += y.shape()[axis];
    }
  };
  s.cases = [] {
    auto split = [](std::vector<double> v) { return in_values({static_cast<int64_t>(v.size())}, DType::i64, v); };
    std::vector<OpCase> c;
    OpCase equal{"equal", {in({6, 4}), in_absent()}, {}, kAllTypes};
    equal.num_outputs = 3;
    c.push_back(equal);
    OpCase sizes{"sizes_axis1", {in({3, 7}), split({2, 0, 5})}, {{"axis", int64_t{1}}}, kF32 | kF16 | kI32};
    sizes.num_outputs = 3;
    c.push_back(sizes);
    OpCase neg{"negative_axis", {in({2, 3, 5}), split({1, 4})}, {{"axis", int64_t{-1}}}, kF32};
    neg.num_outputs = 2;
    c.push_back(neg);
    OpCase uneven{"uneven_opset18", {in({7, 2}), in_absent()}, {{"num_outputs", int64_t{3}}}, kF32};
    uneven.num_outputs = 3;
    c.push_back(uneven);
    OpCase one{"one_output", {in({5}), in_absent()}, {}, kF32};
    c.push_back(one);
    OpCase empty{"empty", {in({0, 4}), in_absent()}, {{"axis", int64_t{1}}}, kF32};
    empty.num_outputs = 2;
    c.push_back(empty);
    return c;
  };
  return s;
}

}  // namespace porta::opdef
