// The cpu's few-row product loop (kernels/cpu/gemv.hpp), which runs Gemm and MatMul with up to
// 4 rows of A against a large B: against the float64 reference on fresh random data, at
// sizes that leave partial vectors and blocks (k and n odd, n past the 512-column block),
// with every Gemm option (transA, transB, alpha, beta, C as a scalar, row, column or matrix),
// MatMul's batched A and 1-d operands, and the dispatcher's choice checked: the loop for up
// to 4 rows, oneDNN for 5 (the answer must agree). The loop itself writes every element of y
// (NaN-poisoned) and nothing past it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/gemv.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using cpu::gemv;
using cpu::gemv_declines;
using cpu::GemvProblem;
using cpu::kGemvMaxRows;

Tensor random(const Shape& shape) {
  InputSpec spec;
  spec.shape = shape;
  return make_input(spec, DType::f32);
}

// The cpu implementation the dispatcher picks for this call.
std::string chosen(const std::string& op, const std::vector<Tensor>& inputs, const Attributes& attrs) {
  const OpSchema* schema = find_op(op);
  Attributes full = complete_attributes(*schema, attrs, op);
  KernelContext call;
  call.op = schema;
  call.attrs = &full;
  call.device = Device::cpu();
  call.inputs = inputs;
  Resolution r = resolve_call(call, DType::f32);
  EXPECT_EQ(r.path, Path::native) << r.reason;
  return r.kernel ? r.kernel->impl.name : "";
}

void check(const std::string& op, const std::vector<Tensor>& inputs, const Attributes& attrs, const char* want_impl,
           const std::string& what) {
  SCOPED_TRACE(what + " (seed " + std::to_string(seed()) + ")");
  EXPECT_EQ(chosen(op, inputs, attrs), want_impl);
  Tensor got = call_op(op, inputs, attrs).at(0);
  Tensor want = reference_op(op, inputs, attrs).at(0);
  // f32 sums of k products: a relative error that grows like sqrt(k) units of roundoff (a
  // 140000-long one measured 1.08e-5 once), at least 1e-5. k: the longer of A's first and
  // last axes (A has at most a few rows here, in either orientation).
  const Tensor& a = inputs.at(0);
  const double k = static_cast<double>(a.rank() == 0 ? 1 : std::max(a.dim(0), a.dim(a.rank() - 1)));
  Comparison c = compare(got, want, std::max(1e-5, 3 * std::ldexp(1.0, -24) * std::sqrt(k)));
  EXPECT_TRUE(c.ok) << c.message;
  double scale = 0;  // every element, not only the norm: within 1e-4 of the largest |y|
  for (double v : want.to_doubles()) scale = std::max(scale, std::fabs(v));
  EXPECT_LE(c.max_abs, 1e-4 * scale) << "max abs error";
}

// k = 259 (a 16-lane tail of 3), n = 1001 (a 4-row tail of 1): 259259 weights, past the
// loop's threshold, so the columns split across threads where there are two.
constexpr int64_t kK = 259, kN = 1001;

// A Linear layer (B n x k): the loop runs one row of A; more go to oneDNN.
TEST(Gemv, GemmLinearLayerEveryRowCount) {
  for (int64_t m = 1; m <= 5; ++m) {
    Tensor a = random({m, kK}), b = random({kN, kK}), c = random({kN});
    Attributes at{{"transB", int64_t{1}}};
    check("Gemm", {a, b, c}, at, m == 1 ? "gemv" : "onednn", str("Gemm ", m, "x", kK, " . (", kN, "x", kK, ")^T + C"));
  }
}

// Every Gemm option, with one row (both layouts of B) and three (B k x n: the L1 block loop).
TEST(Gemv, GemmOptions) {
  const int64_t k = 257, n = 1037;  // B k x n: blocks of 512, 512 and 13 columns
  struct Case {
    bool ta, tb;
    double alpha, beta;
    bool c_rows, c_cols, has_c;  // C's shape: {rows? m : 1, cols? n : 1}, or a scalar for neither
  };
  const Case cases[] = {
      {false, false, 1.0, 1.0, false, true, true},  {true, false, 0.5, 2.0, true, true, true},
      {false, true, -1.5, 0.25, true, false, true}, {true, true, 2.0, -1.0, false, false, true},
      {false, false, 1.0, 0.0, false, true, true},  {true, false, 1.0, 1.0, false, false, false},
      {false, true, 1.0, 1.0, true, true, true},
  };
  for (int64_t m : {1, 3})
    for (const Case& cs : cases) {
      Tensor a = random(cs.ta ? Shape{k, m} : Shape{m, k});
      Tensor b = random(cs.tb ? Shape{n, k} : Shape{k, n});
      std::vector<Tensor> in{a, b};
      Shape c = cs.c_rows ? Shape{m, cs.c_cols ? n : 1} : cs.c_cols ? Shape{n} : Shape{};
      if (cs.has_c) in.push_back(random(c));
      Attributes at{{"transA", int64_t{cs.ta}}, {"transB", int64_t{cs.tb}}, {"alpha", cs.alpha}, {"beta", cs.beta}};
      check("Gemm", in, at, cs.tb && m > 1 ? "onednn" : "gemv",
            str("Gemm m ", m, " transA ", cs.ta, " transB ", cs.tb, " alpha ", cs.alpha, " beta ", cs.beta,
                cs.has_c ? " C " + shape_str(c) : std::string(" no C")));
    }
}

TEST(Gemv, MatMulShapes) {
  struct Case {
    Shape a, b;
    const char* impl;
  };
  const Case cases[] = {
      {{1, 640}, {640, 1001}, "gemv"},      {{640}, {640, 1001}, "gemv"},
      {{2, 1, 300}, {300, 700}, "gemv"},    {{1, 4, 257}, {1, 257, 1037}, "gemv"},
      {{5, 300}, {300, 700}, "onednn"},     {{2, 1, 300}, {2, 300, 700}, "onednn"},
      {{3, 140000}, {140000}, "gemv"},
  };
  for (const Case& cs : cases)
    check("MatMul", {random(cs.a), random(cs.b)}, {}, cs.impl, "MatMul " + shape_str(cs.a) + " x " + shape_str(cs.b));
}

TEST(Gemv, DeclinesSmallOrTallProducts) {
  EXPECT_NE(gemv_declines(1, 64, 64, true), "");                  // B fits in cache
  EXPECT_NE(gemv_declines(kGemvMaxRows + 1, 4096, 4096, true), "");  // enough rows for a GEMM
  EXPECT_NE(gemv_declines(1, 4096, 64, true), "");                // rows of B too short
  EXPECT_NE(gemv_declines(2, 4096, 4096, true), "");              // dot products: one row only
  EXPECT_EQ(gemv_declines(4, 4096, 4096, false), "");
  EXPECT_EQ(gemv_declines(1, 4096, 64, false), "");               // a k x n B has no such rows
  EXPECT_EQ(gemv_declines(1, 4096, 9216, true), "");
}

// The loop writes every element of y, and nothing past it, for both layouts of B, every row
// count (the register blockings group rows of B by the row count and the vector width) and
// tails of every vector width, at every vector width this CPU runs.
TEST(Gemv, WritesExactlyTheOutputAtEveryVectorWidth) {
  for (int width : cpu_vector_widths()) {
    VectorWidth narrow(width);
    for (int64_t k : {37, 64})
      for (bool b_nk : {false, true})
        for (int64_t m : {1, 2, 3, 4, 6})
          for (int64_t n : {1, 15, 16, 17, 513, 4099}) {
            std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(n * k));
            std::uniform_real_distribution<float> u(-1.0f, 1.0f);
            for (float& v : a) v = u(rng());
            for (float& v : b) v = u(rng());
            std::vector<float> y(static_cast<size_t>(m * n + 64), std::numeric_limits<float>::quiet_NaN());
            GemvProblem p;
            p.a = a.data();
            p.m = m;
            p.k = k;
            p.b = b.data();
            p.n = n;
            p.b_nk = b_nk;
            p.y = y.data();
            gemv(p);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double want = 0;
                for (int64_t q = 0; q < k; ++q)
                  want += double(a[i * k + q]) * (b_nk ? b[j * k + q] : b[q * n + j]);
                ASSERT_NEAR(y[i * n + j], want, 1e-5) << (b_nk ? "n x k" : "k x n") << " m " << m << " n " << n
                                                      << " k " << k << " at " << i << "," << j << ", "
                                                      << VectorWidth::name(width);
              }
            for (size_t t = static_cast<size_t>(m * n); t < y.size(); ++t)
              ASSERT_TRUE(std::isnan(y[t])) << "wrote past y at " << t << ", " << VectorWidth::name(width);
          }
  }
}

}  // namespace
}  // namespace porta::test
