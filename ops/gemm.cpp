// Gemm: Y = alpha * op(A) @ op(B) + beta * C, op() transposing when transA / transB is set;
// C is optional and broadcasts (one way) to Y's M x N.
// The porta-internal optional input 3, `porta_residual` (M x N, A's dtype), is added before the
// activation, as MatMul's (ops/matmul.cpp): Y = Act(alpha * op(A) @ op(B) + beta * C + residual).
// The porta-internal attributes `porta_activation`, `porta_activation_alpha` and
// `porta_activation_beta` (ops/fused_activation.hpp) make it Act(Y): graph fusion folds the
// activation after a Gemm (a classifier's Linear + ReLU) into it when every kernel that may
// run the Gemm declares that activation (tests/matmul_activation_test.cpp).
#include "ops/common.hpp"
#include "ops/fused_activation.hpp"

namespace porta::opdef {
namespace {

struct GemmDims {
  int64_t m, n, k;
};

GemmDims gemm_dims(const Shape& a, const Shape& b, const Attributes& attrs) {
  if (a.size() != 2 || b.size() != 2)
    throw ShapeError(str("[Gemm] A and B must be matrices, got A ", shape_str(a), ", B ",
                         shape_str(b)));
  bool ta = attrs.get_int("transA") != 0, tb = attrs.get_int("transB") != 0;
  GemmDims d{ta ? a[1] : a[0], tb ? b[0] : b[1], ta ? a[0] : a[1]};
  int64_t kb = tb ? b[1] : b[0];
  if (d.k != kb)
    throw ShapeError(str("[Gemm] inner dimensions differ: A is ", shape_str(a), (ta ? " (transposed)" : ""),
                         ", B is ", shape_str(b), (tb ? " (transposed)" : ""), " (", d.k, " vs ", kb, ")"));
  return d;
}

}  // namespace

PORTA_REGISTER_OP(Gemm) {
  OpSchema s;
  s.name = "Gemm";
  s.inputs = {"A", "B", "C?", "porta_residual?"};
  s.outputs = {"Y"};
  s.attrs = {attr_float("alpha", 1.0), attr_float("beta", 1.0), attr_int("transA", 0),
             attr_int("transB", 0), attr_string("porta_activation", ""), attr_float("porta_activation_alpha", 0.0),
             attr_float("porta_activation_beta", 0.0)};
  s.infer = [](InferContext& ctx) {
    parse_fused_activation(*ctx.attrs, "Gemm");  // rejects an unknown porta_activation
    for (size_t i : {size_t{1}, size_t{2}})
      if (ctx.has_input(i) && ctx.dtype(i) != ctx.dtype(0))
        throw DTypeError(str("[Gemm] A, B and C must share one dtype: A is ", dtype_name(ctx.dtype(0)), ", input ",
                             i, " is ", dtype_name(ctx.dtype(i))));
    require_dtype(ctx, 0, kFloats);
    GemmDims d = gemm_dims(ctx.shape(0), ctx.shape(1), *ctx.attrs);
    if (ctx.has_input(2)) {
      const Shape& c = ctx.shape(2);
      Shape y{d.m, d.n};
      if (c.size() > 2 || broadcast_shapes(y, c, "Gemm") != y)
        throw ShapeError(str("[Gemm] C must broadcast to ", shape_str(y), ", got ", shape_str(c)));
    }
    if (ctx.has_input(3)) {
      if (ctx.shape(3) != Shape{d.m, d.n})
        throw ShapeError(str("[Gemm] porta_residual must have Y's shape ", shape_str(Shape{d.m, d.n}), ", got ",
                             shape_str(ctx.shape(3))));
      if (ctx.dtype(3) != ctx.dtype(0) && ctx.dtype(3) != DType::f32)
        throw DTypeError(str("[Gemm] porta_residual must be f32 or A's dtype ", dtype_name(ctx.dtype(0)), ", got ",
                             dtype_name(ctx.dtype(3))));
    }
    ctx.set_output(0, {d.m, d.n}, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Attributes& at = *ctx.attrs;
    GemmDims d = gemm_dims(ctx.in(0).shape(), ctx.in(1).shape(), at);
    bool ta = at.get_int("transA") != 0, tb = at.get_int("transB") != 0;
    double alpha = at.get_float("alpha"), beta = at.get_float("beta");
    const double *a = ctx.in(0).data<double>(), *b = ctx.in(1).data<double>();
    Tensor c;
    if (ctx.has_input(2)) c = ctx.in(2).expand({d.m, d.n}).contiguous();
    double* y = ctx.out(0).data<double>();
    const double* residual = ctx.has_input(3) ? ctx.in(3).data<double>() : nullptr;
    const FusedActivation act = parse_fused_activation(at, "Gemm");
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < d.k; ++p)
          acc += (ta ? a[p * d.m + i] : a[i * d.k + p]) * (tb ? b[j * d.k + p] : b[p * d.n + j]);
        const double v = alpha * acc + (c.defined() ? beta * c.data<double>()[i * d.n + j] : 0.0);
        y[i * d.n + j] = act(residual ? v + residual[i * d.n + j] : v);
      }
  };
  s.cases = [] {
    std::vector<OpCase> c;
    // Half types where the cases cover each path of a kernel: C as bias or as a sum, the
    // transposes, alpha and beta, an empty product.
    const DTypeSet all = kF32 | kF64 | kF16 | kBF16;
    c.push_back({"plain", {in({5, 7}), in({7, 3}), in({5, 3})}, {}, all});
    c.push_back({"no_c", {in({5, 7}), in({7, 3}), in_absent()}, {}, all});
    c.push_back({"transA", {in({7, 5}), in({7, 3}), in({3})}, {{"transA", int64_t{1}}}, all});
    c.push_back({"transB", {in({5, 7}), in({3, 7}), in({5, 1})},
                 {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}}, all});
    c.push_back({"transAB", {in({7, 5}), in({3, 7}), in({1})},
                 {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", -1.5}}, all});
    c.push_back({"scalar_c", {in({4, 6}), in({6, 9}), in({})}, {{"beta", 0.0}}, all});
    c.push_back({"1x1", {in({1, 1}), in({1, 1}), in({1, 1})}, {}, kF32 | kF64});
    c.push_back({"empty_k", {in({3, 0}), in({0, 4}), in({3, 4})}, {{"beta", 0.5}}, all});
    c.push_back({"empty_m", {in({0, 4}), in({4, 5}), in({5})}, {}, kF32});
    c.push_back({"long_k_transAB", {in({90, 6}), in({5, 90}), in({6, 5})},
                 {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", -2.0}}, all});
    OpCase big{"1024x1024x1024", {in({1024, 1024}), in({1024, 1024}), in({1024})},
               {{"transB", int64_t{1}}}, kF32};
    big.perf = true;
    big.tolerance = 1e-4;  // f32 sums of 1024 products (see MatMul)
    c.push_back(big);
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>& outs, const Attributes& a) {
    int64_t k = a.get_int("transA", 0) ? ins[0][0] : ins[0][1];
    return 2.0 * static_cast<double>(shape_numel(outs[0])) * static_cast<double>(k);
  };
  return s;
}

}  // namespace porta::opdef
