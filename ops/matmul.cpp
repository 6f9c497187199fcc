// MatMul: NumPy matmul. 1-D a is a row vector ([K] -> [1, K], the 1 dropped from the
// result), 1-D b a column vector ([K] -> [K, 1], the 1 dropped); leading (batch) axes
// broadcast.
// The porta-internal optional input 2, `porta_bias` (1-D, one value per column of the result,
// f32 or A's dtype), is added to every row of the product: a Linear layer's bias. Graph fusion
// sets it for an Add of a constant row that follows the MatMul, when every kernel that may run
// the MatMul declares "porta_bias" (KernelDef::fused_activations; runtime/graph_fusion.hpp).
// The porta-internal optional input 3, `porta_residual` (shaped like the result, A's dtype or
// f32), is added before the activation: a transformer block's residual Add after its output
// projection or its second feed-forward layer. Graph fusion sets it like Conv's
// (runtime/graph_fusion.cpp, fuse_residual_add; tests/residual_fusion_test.cpp).
// The porta-internal attributes `porta_activation`, `porta_activation_alpha` and
// `porta_activation_beta` (ops/fused_activation.hpp) make it Act(A x B + bias + residual): graph fusion
// folds the activation after a MatMul (a Linear layer's ReLU or GELU) into it when every
// kernel that may run the MatMul declares that activation (tests/matmul_bias_test.cpp).
#include "ops/common.hpp"
#include "ops/fused_activation.hpp"

namespace porta::opdef {
namespace {

// Shapes with 1-D operands promoted to matrices; `out` is the result before dropping the
// promoted axes.
struct MatMulShapes {
  Shape a, b, out, result;
};

MatMulShapes matmul_shapes(const Shape& a0, const Shape& b0) {
  if (a0.empty() || b0.empty())
    throw ShapeError(str("[MatMul] operands must have rank >= 1, got a ", shape_str(a0), ", b ",
                         shape_str(b0)));
  MatMulShapes s{a0, b0, {}, {}};
  if (s.a.size() == 1) s.a.insert(s.a.begin(), 1);
  if (s.b.size() == 1) s.b.push_back(1);
  int64_t k_a = s.a.back(), k_b = s.b[s.b.size() - 2];
  if (k_a != k_b)
    throw ShapeError(str("[MatMul] inner dimensions differ: a is ", shape_str(a0), ", b is ",
                         shape_str(b0), " (", k_a, " vs ", k_b, ")"));
  Shape batch_a(s.a.begin(), s.a.end() - 2), batch_b(s.b.begin(), s.b.end() - 2);
  try {
    s.out = broadcast_shapes(batch_a, batch_b, "MatMul");
  } catch (const ShapeError&) {
    throw ShapeError(str("[MatMul] batch dimensions do not broadcast: a is ", shape_str(a0), ", b is ",
                         shape_str(b0)));
  }
  s.out.push_back(s.a[s.a.size() - 2]);
  s.out.push_back(s.b.back());
  s.result = s.out;
  if (b0.size() == 1) s.result.pop_back();
  if (a0.size() == 1) s.result.erase(s.result.end() - (b0.size() == 1 ? 1 : 2));
  return s;
}

}  // namespace

PORTA_REGISTER_OP(MatMul) {
  OpSchema s;
  s.name = "MatMul";
  s.inputs = {"A", "B", "porta_bias?", "porta_residual?"};
  s.outputs = {"Y"};
  s.attrs = {attr_string("porta_activation", ""), attr_float("porta_activation_alpha", 0.0),
             attr_float("porta_activation_beta", 0.0)};
  s.infer = [](InferContext& ctx) {
    parse_fused_activation(*ctx.attrs, "MatMul");  // rejects an unknown porta_activation
    if (ctx.dtype(1) != ctx.dtype(0))
      throw DTypeError(str("[MatMul] A and B must share one dtype: A is ", dtype_name(ctx.dtype(0)), ", B is ",
                           dtype_name(ctx.dtype(1))));
    require_dtype(ctx, 0, kFloats);
    const MatMulShapes sh = matmul_shapes(ctx.shape(0), ctx.shape(1));
    if (ctx.has_input(2)) {
      const Shape& bias = ctx.shape(2);
      if (ctx.shape(1).size() < 2 || bias.size() != 1 || bias[0] != sh.out.back())
        throw ShapeError(str("[MatMul] porta_bias must be 1-D with one value per column of the product (",
                             ctx.shape(1).size() < 2 ? std::string("B has no columns: it is 1-D")
                                                     : str(sh.out.back(), " columns"),
                             "), got ", shape_str(bias)));
      if (ctx.dtype(2) != ctx.dtype(0) && ctx.dtype(2) != DType::f32)
        throw DTypeError(str("[MatMul] porta_bias must be f32 or A's dtype ", dtype_name(ctx.dtype(0)), ", got ",
                             dtype_name(ctx.dtype(2))));
    }
    if (ctx.has_input(3)) {
      if (ctx.shape(3) != sh.result)
        throw ShapeError(str("[MatMul] porta_residual must have the result's shape ", shape_str(sh.result), ", got ",
                             shape_str(ctx.shape(3))));
      if (ctx.dtype(3) != ctx.dtype(0) && ctx.dtype(3) != DType::f32)
        throw DTypeError(str("[MatMul] porta_residual must be f32 or A's dtype ", dtype_name(ctx.dtype(0)),
                             ", got ", dtype_name(ctx.dtype(3))));
    }
    ctx.set_output(0, sh.result, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    MatMulShapes sh = matmul_shapes(ctx.in(0).shape(), ctx.in(1).shape());
    Shape ea = sh.out, eb = sh.out;  // a and b broadcast to the output's batch
    ea[ea.size() - 1] = sh.a.back();
    eb[eb.size() - 2] = sh.b[sh.b.size() - 2];
    Tensor a = ctx.in(0).reshape(sh.a).expand(ea).contiguous();
    Tensor b = ctx.in(1).reshape(sh.b).expand(eb).contiguous();
    int64_t m = sh.out[sh.out.size() - 2], n = sh.out.back(), k = sh.a.back();
    int64_t batches = m * n == 0 ? 0 : shape_numel(sh.out) / (m * n);
    const double *pa = a.data<double>(), *pb = b.data<double>();
    const double* bias = ctx.has_input(2) ? ctx.in(2).data<double>() : nullptr;
    double* py = ctx.out(0).data<double>();
    const double* residual = ctx.has_input(3) ? ctx.in(3).data<double>() : nullptr;  // Y's layout
    const FusedActivation act = parse_fused_activation(*ctx.attrs, "MatMul");
    for (int64_t bi = 0; bi < batches; ++bi)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = bias ? bias[j] : 0.0;
          for (int64_t p = 0; p < k; ++p) acc += pa[(bi * m + i) * k + p] * pb[(bi * k + p) * n + j];
          const int64_t at = (bi * m + i) * n + j;
          py[at] = act(residual ? acc + residual[at] : acc);
        }
  };
  s.cases = [] {
    const DTypeSet all = kF32 | kF64 | kF16 | kBF16;
    std::vector<OpCase> c;
    c.push_back({"2d_odd", {in({7, 13}), in({13, 5})}, {}, all});
    c.push_back({"1x1", {in({1, 1}), in({1, 1})}, {}, kF32 | kF64});
    c.push_back({"vec_vec", {in({9}), in({9})}, {}, kF32 | kF64});
    c.push_back({"vec_mat", {in({6}), in({6, 4})}, {}, kF32 | kF64});
    c.push_back({"mat_vec", {in({4, 6}), in({6})}, {}, kF32 | kF64});
    c.push_back({"vec_batched", {in({6}), in({3, 6, 5})}, {}, kF32 | kF64});
    c.push_back({"batched_vec", {in({2, 3, 4, 6}), in({6})}, {}, kF32 | kF64});
    c.push_back({"batched", {in({3, 5, 7}), in({3, 7, 2})}, {}, all});
    c.push_back({"broadcast_b", {in({2, 3, 5, 7}), in({7, 4})}, {}, kF32 | kF64});
    c.push_back({"broadcast_both", {in({2, 1, 5, 7}), in({1, 3, 7, 4})}, {}, kF32 | kF64 | kBF16});
    c.push_back({"broadcast_rank", {in({4, 1, 3, 2}), in({5, 2, 6})}, {}, kF32});
    c.push_back({"empty_m", {in({0, 7}), in({7, 3})}, {}, kF32 | kF64});
    c.push_back({"empty_k", {in({4, 0}), in({0, 3})}, {}, kF32 | kF64});
    c.push_back({"empty_batch", {in({0, 2, 3}), in({3, 4})}, {}, kF32});
    // Inner dimensions past a few 16-deep tiles: split over dispatches under a (test-forced)
    // driver loop cap (tests/vulkan_loop_cap_compute_test.cpp).
    c.push_back({"long_k", {in({5, 100}), in({100, 6})}, {}, kF32 | kF64});
    c.push_back({"long_k_broadcast", {in({2, 1, 3, 75}), in({3, 75, 4})}, {}, kF32 | kF64});
    // Reductions of length 1024 in f32 (pairwise-ish in oneDNN vs f64): relative error grows
    // about like sqrt(K) * 2^-24, far below 1e-4.
    OpCase big{"1024x1024x1024", {in({1024, 1024}), in({1024, 1024})}, {}, kF32};
    big.perf = true;
    big.tolerance = 1e-4;
    c.push_back(big);
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>& outs, const Attributes&) {
    int64_t k = ins[0].back();
    return 2.0 * static_cast<double>(shape_numel(outs[0])) * static_cast<double>(k);
  };
  return s;
}

}  // namespace porta::opdef
