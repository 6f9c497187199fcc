// InstanceNormalization: each (n, c) slice of X (N x C x D1 x ...) is normalized over its
// spatial elements with the biased variance, then scaled and shifted per channel:
//   Y = (X - mean) / sqrt(var + epsilon) * scale[c] + B[c].
#include <cmath>

#include "ops/common.hpp"

namespace porta::opdef {

PORTA_REGISTER_OP(InstanceNormalization) {
  OpSchema s;
  s.name = "InstanceNormalization";
  s.inputs = {"input", "scale", "B"};
  s.outputs = {"output"};
  s.attrs = {attr_float("epsilon", 1e-5)};
  s.infer = [](InferContext& ctx) {
    require_same_dtype(ctx);
    require_dtype(ctx, 0, kFloats);
    const Shape& x = ctx.shape(0);
    if (x.size() < 3)
      throw ShapeError(str("[InstanceNormalization] input must be N x C x D1 x ..., got ", shape_str(x)));
    for (size_t i = 1; i < 3; ++i)
      if (ctx.shape(i) != Shape{x[1]})
        throw ShapeError(str("[InstanceNormalization] ", i == 1 ? "scale" : "B", " must have shape ",
                             x[1], " (the channels of input ", shape_str(x), "), got ",
                             shape_str(ctx.shape(i))));
    ctx.set_output(0, x, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Shape& sh = ctx.in(0).shape();
    int64_t c = sh[1], inner = 1;
    for (size_t i = 2; i < sh.size(); ++i) inner *= sh[i];
    int64_t slices = sh[0] * c;
    double eps = ctx.attrs->get_float("epsilon");
    const double *x = ctx.in(0).data<double>(), *scale = ctx.in(1).data<double>(),
                 *bias = ctx.in(2).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t sl = 0; sl < slices; ++sl) {
      const double* px = x + sl * inner;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < inner; ++j) mean += px[j];
      mean /= static_cast<double>(inner);
      for (int64_t j = 0; j < inner; ++j) var += (px[j] - mean) * (px[j] - mean);
      var /= static_cast<double>(inner);
      for (int64_t j = 0; j < inner; ++j)
        y[sl * inner + j] = (px[j] - mean) / std::sqrt(var + eps) * scale[sl % c] + bias[sl % c];
    }
  };
  s.cases = [] {
    auto inorm = [](Shape x) {
      int64_t c = x[1];
      return std::vector<InputSpec>{in(x), in({c}), in({c})};
    };
    std::vector<OpCase> c;
    c.push_back({"nchw", inorm({2, 3, 5, 7}), {}, kF32 | kF64});
    c.push_back({"ncw", inorm({3, 4, 9}), {{"epsilon", 1e-2}}, kF32 | kF64});
    c.push_back({"ncdhw", inorm({1, 2, 3, 4, 5}), {}, kF32});
    c.push_back({"one_element", inorm({2, 3, 1}), {}, kF32 | kF64});
    c.push_back({"empty_n", inorm({0, 3, 4}), {}, kF32});
    return c;
  };
  s.flops = flops_per_output_element(5);
  return s;
}

}  // namespace porta::opdef
