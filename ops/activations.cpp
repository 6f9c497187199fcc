// Float activations with attributes: LeakyRelu (alpha = 0.01), Elu (alpha = 1.0), Selu, Celu,
// HardSigmoid (alpha = 0.2, beta = 0.5), and the attribute-free HardSwish, Softplus, Softsign.
// NaN propagates through every one of them, as in PyTorch.
#include <algorithm>
#include <cmath>

#include "ops/elementwise_common.hpp"
#include "ops/fused_activation.hpp"  // the scalar math, shared with Conv's fused activations

namespace porta::opdef {

PORTA_REGISTER_OP(LeakyRelu) {
  OpSchema s = ew::unary_schema("LeakyRelu", kFloats, [](double x, const Attributes& a, DType) {
    return act::leaky_relu(x, a.get_float("alpha"));
  });
  s.attrs = {attr_float("alpha", 0.01)};
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-3, 3}, {});
    for (auto& v : ew::unary_cases(kFloats, 0, {-3, 3}, {}, {{"alpha", 0.2}}, "_alpha0.2", false))
      c.push_back(v);
    c.push_back({"alpha_negative", {ew::spec({3, 5, 7}, {-3, 3})}, {{"alpha", -1.5}}, kF32 | kF64});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Elu) {
  OpSchema s = ew::unary_schema("Elu", kFloats, [](double x, const Attributes& a, DType) {
    return act::elu(x, a.get_float("alpha"));
  });
  s.attrs = {attr_float("alpha", 1.0)};
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-4, 3}, {});
    for (auto& v : ew::unary_cases(kFloats, 0, {-4, 3}, {}, {{"alpha", 0.5}}, "_alpha0.5", false))
      c.push_back(v);
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(HardSigmoid) {
  OpSchema s = ew::unary_schema("HardSigmoid", kFloats, [](double x, const Attributes& a, DType) {
    return act::hard_sigmoid(x, a.get_float("alpha"), a.get_float("beta"));
  });
  s.attrs = {attr_float("alpha", 0.2), attr_float("beta", 0.5)};
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-6, 6}, {});
    // PyTorch's Hardsigmoid exports as alpha = 1/6, beta = 0.5.
    for (auto& v : ew::unary_cases(kFloats, 0, {-6, 6}, {}, {{"alpha", 1.0 / 6.0}, {"beta", 0.5}}, "_torch", false))
      c.push_back(v);
    c.push_back({"nan_and_inf", {ew::fixed({4}, {NAN, INFINITY, -INFINITY, 2.5})}, {}, kF32 | kF64});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(HardSwish) {
  OpSchema s = ew::unary_schema("HardSwish", kFloats, [](double x, const Attributes&, DType) {
    return act::hard_swish(x);
  });
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-6, 6}, {});
    c.push_back({"knees", {ew::fixed({6}, {-3, 3, -3.0001, 3.0001, 0, NAN})}, {}, kF32 | kF64});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Softplus) {
  OpSchema s = ew::unary_schema("Softplus", kFloats, [](double x, const Attributes&, DType) {
    return std::isnan(x) ? x : std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
  });
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-10, 10}, {}, {}, "", false);
    c.push_back({"large", {ew::fixed({4}, {-100, 100, 88.5, -88.5})}, {}, kF32 | kF64});
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Softsign) {
  OpSchema s = ew::unary_schema("Softsign", kFloats,
                                [](double x, const Attributes&, DType) { return x / (1.0 + std::abs(x)); });
  s.cases = [] { return ew::unary_cases(kFloats, 0, {-10, 10}, {}, {}, "", false); };
  return s;
}

PORTA_REGISTER_OP(Selu) {
  OpSchema s = ew::unary_schema("Selu", kFloats, [](double x, const Attributes& a, DType) {
    double alpha = a.get_float("alpha"), gamma = a.get_float("gamma");
    return x > 0 ? gamma * x : gamma * alpha * std::expm1(x);
  });
  // ONNX's defaults are the float32 values of PyTorch's constants.
  s.attrs = {attr_float("alpha", 1.67326319217681884765625), attr_float("gamma", 1.05070102214813232421875)};
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-4, 3}, {}, {}, "", false);
    for (auto& v : ew::unary_cases(kFloats, 0, {-4, 3}, {}, {{"alpha", 2.0}, {"gamma", 3.0}}, "_attrs", false))
      c.push_back(v);
    return c;
  };
  return s;
}

PORTA_REGISTER_OP(Celu) {
  OpSchema s = ew::unary_schema("Celu", kFloats, [](double x, const Attributes& a, DType) {
    double alpha = a.get_float("alpha");
    return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
  });
  s.attrs = {attr_float("alpha", 1.0)};
  s.infer = [base = s.infer](InferContext& ctx) {
    if (ctx.attrs->get_float("alpha") == 0.0) throw InvalidArgument("[Celu] expected a non-zero alpha, got 0");
    base(ctx);
  };
  s.cases = [] {
    auto c = ew::unary_cases(kFloats, 0, {-4, 3}, {}, {}, "", false);
    for (auto& v : ew::unary_cases(kFloats, 0, {-4, 3}, {}, {{"alpha", 0.5}}, "_alpha0.5", false)) c.push_back(v);
    return c;
  };
  return s;
}

}  // namespace porta::opdef
