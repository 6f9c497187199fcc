// Trilu (opset 14): keeps the upper (upper = 1: column - row >= k) or lower (upper = 0:
// column - row <= k) triangle of the last two axes, batched over the others, and zeroes the
// rest. k (input 1, optional, a 0-D or 1-element i64 tensor, a host input) shifts the diagonal:
// positive above the main one, negative below; any value, also beyond the matrix. Any dtype.
#include <limits>

#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::opdef {
namespace {

int64_t k_value(const std::vector<int64_t>& v, const Shape& k_shape) {
  if (v.size() != 1 || k_shape.size() > 1)
    throw ShapeError(str("[Trilu] expected k as a 0-D or 1-element tensor, got shape ", shape_str(k_shape)));
  return v[0];
}

}  // namespace

int64_t trilu_k(const KernelContext& ctx) {
  if (!ctx.has_input(1)) return 0;
  Tensor t = ctx.in(1).to(Device::cpu()).contiguous();
  std::vector<int64_t> v;
  if (t.dtype() == DType::i64) v.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  else if (t.dtype() == DType::i32) v.assign(t.data<int32_t>(), t.data<int32_t>() + t.numel());
  else
    for (double d : t.to_doubles()) v.push_back(static_cast<int64_t>(d));  // the f64 reference
  return k_value(v, t.shape());
}

PORTA_REGISTER_OP(Trilu) {
  OpSchema s;
  s.name = "Trilu";
  s.inputs = {"input", "k?"};
  s.outputs = {"output"};
  s.attrs = {attr_int("upper", 1)};
  s.host_inputs = {1};
  s.infer = [](InferContext& ctx) {
    const Shape& x = ctx.shape(0);
    if (x.size() < 2) throw ShapeError(str("[Trilu] expected input of rank >= 2, got shape ", shape_str(x)));
    if (ctx.has_input(1)) {
      require_dtype(ctx, 1, kI64 | kI32);
      k_value(ctx.int_values(1), ctx.shape(1));
    }
    ctx.set_output(0, x, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    int64_t k = trilu_k(ctx);
    bool upper = ctx.attrs->get_int("upper") != 0;
    int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
    int64_t batch = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
    const double* src = x.data<double>();
    double* dst = ctx.out(0).data<double>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          bool keep = upper ? j - i >= k : j - i <= k;
          int64_t at = (b * rows + i) * cols + j;
          dst[at] = keep ? src[at] : 0.0;
        }
  };
  s.cases = [] {
    auto k = [](double v) { return in_values({}, DType::i64, {v}); };
    Attributes lower{{"upper", int64_t{0}}};
    std::vector<OpCase> c;
    c.push_back({"upper", {in({4, 5}), in_absent()}, {}, kAllTypes});
    c.push_back({"lower", {in({5, 4}), in_absent()}, lower, kAllTypes});
    c.push_back({"upper_k_pos", {in({4, 6}), k(2)}, {}, kF32 | kI64});
    c.push_back({"upper_k_neg", {in({6, 4}), k(-2)}, {}, kF32 | kF16});
    c.push_back({"lower_k_pos", {in({5, 5}), k(1)}, lower, kF32 | kI32});
    c.push_back({"lower_k_neg", {in({3, 7}), in_values({1}, DType::i64, {-1})}, lower, kF32 | kU8});
    c.push_back({"upper_k_beyond", {in({3, 4}), k(9)}, {}, kF32});
    c.push_back({"upper_k_below_all", {in({3, 4}), k(-9)}, {}, kF32 | kBool});
    c.push_back({"lower_k_beyond", {in({3, 4}), k(5)}, lower, kF32 | kI8});
    c.push_back({"lower_k_below_all", {in({3, 4}), k(-4)}, lower, kF32});
    c.push_back({"lower_k_huge", {in({3, 4}), k(-4e15)}, lower, kF32});
    c.push_back({"upper_k_huge", {in({3, 4}), k(4e15)}, {}, kF32});
    c.push_back({"batched_3d", {in({3, 4, 5}), k(1)}, lower, kF32 | kF64 | kI64});
    c.push_back({"batched_4d", {in({2, 3, 5, 4}), k(-1)}, {}, kF32 | kBF16 | kI32});
    c.push_back({"one_row", {in({1, 5}), k(-1)}, lower, kF32});
    c.push_back({"size1", {in({1, 1}), in_absent()}, {}, kF32});
    c.push_back({"empty", {in({0, 5}), k(1)}, {}, kF32});
    c.push_back({"empty_batch", {in({0, 3, 3}), in_absent()}, lower, kF32});
    c.push_back({"large", {in({3, 170, 130}), k(3)}, {}, kF32 | kF16 | kI64});
    OpCase perf{"16x1024x1024", {in({16, 1024, 1024}), in_absent()}, {}, kF32};
    perf.perf = true;
    c.push_back(perf);
    return c;
  };
  return s;
}

}  // namespace porta::opdef
