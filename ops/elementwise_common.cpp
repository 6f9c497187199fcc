// porta ops — schema builders, references and cases shared by the elementwise family.
#include "ops/elementwise_common.hpp"

#include <cmath>

namespace porta::opdef::ew {

double wrap_to(double v, DType t) {
  if (!is_integer(t) || std::isnan(v) || std::isinf(v)) return v;
  int bits = static_cast<int>(dtype_size(t)) * 8;
  if (bits == 64) return v;  // references stay far from the i64 range
  double m = std::ldexp(1.0, bits);
  double r = std::fmod(v, m);
  if (r < 0) r += m;
  if (t != DType::u8 && r >= m / 2) r -= m;
  return r;
}

namespace {

// Input i of a reference broadcast to the output's shape, contiguous.
Tensor expanded(KernelContext& ctx, size_t i) {
  return ctx.in(i).expand(ctx.out(0).shape()).contiguous();
}

DType source_dtype(const KernelContext& ctx, size_t i) {
  return i < ctx.source_dtypes.size() ? ctx.source_dtypes[i] : DType::f64;
}

}  // namespace

OpSchema unary_schema(std::string name, DTypeSet allowed, UnaryRef f) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = {"X"};
  s.outputs = {"Y"};
  s.infer = [allowed](InferContext& ctx) {
    require_dtype(ctx, 0, allowed);
    infer_same_as_input0(ctx);
  };
  s.reference = [f](KernelContext& ctx) {
    DType t = source_dtype(ctx, 0);
    const double* x = ctx.in(0).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < ctx.out(0).numel(); ++i) y[i] = wrap_to(f(x[i], *ctx.attrs, t), t);
  };
  s.flops = flops_per_output_element(1);
  return s;
}

namespace {

OpSchema make_binary(std::string name, DTypeSet allowed, BinaryAttrRef f, bool bool_output) {
  OpSchema s;
  s.name = std::move(name);
  s.inputs = {"A", "B"};
  s.outputs = {"C"};
  s.infer = [allowed, bool_output](InferContext& ctx) {
    require_dtype(ctx, 0, allowed);
    require_same_dtype(ctx);
    if (bool_output) infer_broadcast(ctx, DType::boolean);
    else infer_broadcast(ctx);
  };
  s.reference = [f, bool_output](KernelContext& ctx) {
    DType t = source_dtype(ctx, 0);
    Tensor a = expanded(ctx, 0), b = expanded(ctx, 1);
    const double *pa = a.data<double>(), *pb = b.data<double>();
    double* pc = ctx.out(0).data<double>();
    for (int64_t i = 0; i < ctx.out(0).numel(); ++i) {
      double v = f(pa[i], pb[i], *ctx.attrs, t);
      pc[i] = bool_output ? (v != 0.0 ? 1.0 : 0.0) : wrap_to(v, t);
    }
  };
  s.flops = flops_per_output_element(1);
  return s;
}

}  // namespace

OpSchema binary_schema(std::string name, DTypeSet allowed, BinaryRef f, bool bool_output) {
  return make_binary(std::move(name), allowed,
                     [f](double a, double b, const Attributes&, DType t) { return f(a, b, t); }, bool_output);
}

OpSchema binary_schema_with_attrs(std::string name, DTypeSet allowed, BinaryAttrRef f) {
  return make_binary(std::move(name), allowed, std::move(f), false);
}

InputSpec spec(Shape shape, Range r) {
  InputSpec s;
  s.shape = std::move(shape);
  s.lo = r.lo;
  s.hi = r.hi;
  s.integers = r.integers;
  return s;
}

InputSpec fixed(Shape shape, std::vector<double> values) {
  InputSpec s;
  s.shape = std::move(shape);
  s.values = std::move(values);
  return s;
}

std::vector<OpCase> unary_cases(DTypeSet floats, DTypeSet ints, Range f, Range i,
                                const Attributes& attrs, const std::string& suffix, bool perf) {
  std::vector<OpCase> c;
  if (floats) {
    c.push_back({"scalar" + suffix, {spec({}, f)}, attrs, floats});
    c.push_back({"empty" + suffix, {spec({0, 3}, f)}, attrs, floats});
    c.push_back({"one" + suffix, {spec({1}, f)}, attrs, floats});
    c.push_back({"odd" + suffix, {spec({3, 5, 7}, f)}, attrs, floats});
    c.push_back({"rows" + suffix, {spec({33, 65}, f)}, attrs, floats});
    if (perf && dtype_in(floats, DType::f32)) {
      OpCase big{"4096x4096" + suffix, {spec({4096, 4096}, f)}, attrs, kF32};
      big.perf = true;
      c.push_back(big);
    }
  }
  if (ints) {
    c.push_back({"ints_scalar" + suffix, {spec({}, i)}, attrs, ints});
    c.push_back({"ints_empty" + suffix, {spec({0, 3}, i)}, attrs, ints});
    c.push_back({"ints_one" + suffix, {spec({1}, i)}, attrs, ints});
    c.push_back({"ints_odd" + suffix, {spec({3, 5, 7}, i)}, attrs, ints});
    c.push_back({"ints_rows" + suffix, {spec({33, 65}, i)}, attrs, ints});
  }
  return c;
}

std::vector<OpCase> binary_cases(DTypeSet floats, DTypeSet ints, Range fa, Range fb, Range ia,
                                 Range ib) {
  std::vector<OpCase> c;
  auto shapes = [&](DTypeSet d, Range a, Range b, const std::string& p) {
    c.push_back({p + "same", {spec({3, 5, 7}, a), spec({3, 5, 7}, b)}, {}, d});
    c.push_back({p + "row", {spec({4, 7}, a), spec({7}, b)}, {}, d});
    c.push_back({p + "column", {spec({4, 7}, a), spec({4, 1}, b)}, {}, d});
    c.push_back({p + "both_sides", {spec({2, 1, 5}, a), spec({3, 1}, b)}, {}, d});
    c.push_back({p + "scalar_b", {spec({3, 4}, a), spec({}, b)}, {}, d});
    c.push_back({p + "scalar_a", {spec({}, a), spec({5}, b)}, {}, d});
    c.push_back({p + "scalars", {spec({}, a), spec({}, b)}, {}, d});
    c.push_back({p + "empty", {spec({0, 4}, a), spec({4}, b)}, {}, d});
    c.push_back({p + "one", {spec({1}, a), spec({1}, b)}, {}, d});
  };
  if (floats) {
    shapes(floats, fa, fb, "");
    if (dtype_in(floats, DType::f32)) {
      OpCase big{"4096x4096", {spec({4096, 4096}, fa), spec({4096, 4096}, fb)}, {}, kF32};
      big.perf = true;
      c.push_back(big);
    }
  }
  if (ints) shapes(ints, ia, ib, "ints_");
  return c;
}

}  // namespace porta::opdef::ew
