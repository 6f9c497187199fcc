// The cpu MatMul's and Gemm's "panels" implementations (kernels/cpu/matmul.cpp, gemm.cpp,
// panels.hpp): more rows than the gemv loop takes against one constant B, packed once per
// session. Against the float64 reference (and a session without fusion) on fresh random data, at every vector width
// this CPU runs (the register blockings differ), with row counts around each width's rows per
// pass (6 and 12), columns that leave a partial panel, odd K, A's batches folded into rows, and
// the fused bias and activation; the dispatcher's choice and its reasons to decline checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/panels.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/precision_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// Rows the implementation takes at this width.
int64_t max_rows() { return cpu::panel_product_max_rows(); }

struct Built {
  ReferenceGraph g;
  std::string out;
};

// x [a] -> MatMul(w [k, n]) (-> Add bias) (-> Relu) -> y
Built build(const Shape& a, int64_t n, bool bias, bool relu) {
  Built b;
  const int64_t k = a.back();
  const double r = 1.7 / std::sqrt(static_cast<double>(k));
  b.g.input("x", random_f32(a));
  b.g.initializer("w", random_f32({k, n}, -r, r));
  b.g.node("MatMul", {"x", "w"}, "m");
  std::string y = "m";
  if (bias) {
    b.g.initializer("b", random_f32({n}));
    b.g.node("Add", {y, "b"}, "mb");
    y = "mb";
  }
  if (relu) {
    b.g.node("Relu", {y}, "mr");
    y = "mr";
  }
  b.g.output(y);
  b.out = y;
  return b;
}

// x [rows, k] -> Gemm(w: [k, n], or [n, k] with transB; c: a bias row, when `c`) (-> Relu) -> y
ReferenceGraph gemm_graph(int64_t rows, int64_t k, int64_t n, bool tb, bool c, bool relu) {
  const double r = 1.7 / std::sqrt(static_cast<double>(k));
  ReferenceGraph g;
  g.input("x", random_f32({rows, k}));
  g.initializer("w", random_f32(tb ? Shape{n, k} : Shape{k, n}, -r, r));
  std::vector<std::string> in = {"x", "w"};
  if (c) {
    g.initializer("c", random_f32({n}));
    in.push_back("c");
  }
  g.node("Gemm", in, relu ? "m" : "y", {{"transB", int64_t{tb ? 1 : 0}}});
  if (relu) g.node("Relu", {"m"}, "y");
  g.output("y");
  return g;
}

// Both with and without the next panel's prefetch (panel_product's weights_cached).
TEST(CpuPanels, MatchesTheReferenceAtEveryVectorWidth) {
  for (int width : cpu_vector_widths()) {
    VectorWidth narrow(width);
    for (int64_t rows : {5, 6, 7, 11, 12, 13, 17, 31, 64})
      for (const auto& [k, n] : std::vector<std::pair<int64_t, int64_t>>{{33, 1000}, {300, 131}, {768, 96}})
        for (bool fused : {false, true}) {
          if (rows > max_rows()) continue;
          ConstantsCached cached(fused);
          SCOPED_TRACE(str(rows, " x ", k, " x ", n, fused ? ", bias and Relu" : "", ", ", VectorWidth::name(width),
                           ", ", ConstantsCached::name(fused), " (seed ", seed(), ")"));
          Built b = build({rows, k}, n, fused, fused);
          ReferenceRun r = run_against_reference(b.g, {b.out});
          EXPECT_EQ(cpu_impl_of(r.plan, "MatMul"), "panels");
        }
  }
}

// A's leading axes are rows of the one product (B is 2-d), and the panels split over two
// threads.
TEST(CpuPanels, BatchedRowsAndTwoThreads) {
  TwoThreads threads;
  for (const Shape& a : {Shape{2, 7, 300}, Shape{3, 1, 2, 300}}) {
    SCOPED_TRACE(str(shape_str(a), " (seed ", seed(), ")"));
    Built b = build(a, 1000, true, false);
    ReferenceRun r = run_against_reference(b.g, {b.out});
    EXPECT_EQ(cpu_impl_of(r.plan, "MatMul"), "panels");
  }
}

// Products of fewer panels than twice the threads split into units of (panel, column pass,
// rows) on two threads (panels.hpp, panel_units): 1 to 3 panels, a partial last one, row counts
// around the passes' rows, at every vector width; the thresholds scaled down so that every
// such product splits, and each checked to have split.
TEST(CpuPanels, FewPanelsSplitIntoUnitsOnTwoThreads) {
  TwoThreads threads;
  cpu::set_parallel_scale(1e-3);
  for (int width : cpu_vector_widths()) {
    VectorWidth narrow(width);
    for (int64_t rows : {2, 3, 5, 6, 7, 11, 12, 13, 16, 17, 25, 64})
      for (int64_t n : {32, 40, 96}) {
        if (rows > max_rows()) continue;
        const int64_t k = 1031, panels = (n + cpu::kPanel - 1) / cpu::kPanel;  // B past 2^15 elements
        SCOPED_TRACE(str(rows, " x ", k, " x ", n, ", ", VectorWidth::name(width), " (seed ", seed(), ")"));
        const cpu::PanelUnits split = cpu::panel_units(rows, k, panels);
        EXPECT_EQ(split.threads, 2);
        EXPECT_EQ(split.units, panels * cpu::panel_column_passes() * split.groups);
        EXPECT_GE(split.groups * split.per_group, rows);
        EXPECT_LT((split.groups - 1) * split.per_group, rows);
        EXPECT_LE(split.per_group, cpu::panel_rows_per_pass());
        Built b = build({rows, k}, n, true, true);
        ReferenceRun r = run_against_reference(b.g, {b.out});
        EXPECT_EQ(cpu_impl_of(r.plan, "MatMul"), "panels");
      }
  }
}

// Gemm (a Linear layer on 2-d rows): B as stored (k x n) or transposed (n x k, transB), C as
// a bias row, a fused Relu; at every vector width.
TEST(CpuPanels, GemmEitherLayoutOfB) {
  for (int width : cpu_vector_widths()) {
    VectorWidth narrow(width);
    for (int64_t rows : {int64_t{5}, int64_t{13}, std::min<int64_t>(40, max_rows())})
      for (bool tb : {false, true})
        for (bool c : {false, true}) {
          SCOPED_TRACE(str(rows, " rows, transB ", tb, c ? ", C" : "", ", ", VectorWidth::name(width), " (seed ", seed(),
                           ")"));
          ReferenceGraph g = gemm_graph(rows, 300, 131, tb, c, true);
          ReferenceRun run = run_against_reference(g, {"y"});
          EXPECT_EQ(cpu_impl_of(run.plan, "Gemm"), "panels");
        }
  }
}

TEST(CpuPanels, DeclinesWithAReason) {
  struct Case {
    Shape a;
    int64_t n;
    const char* impl;
    const char* reason;
  };
  const std::vector<Case> cases = {
      {{max_rows() + 1, 768}, 768, "onednn", "enough reuse of B"},
      {{8, 64}, 64, "onednn", "stays in cache"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.a));
    Built b = build(c.a, c.n, false, false);
    ReferenceRun r = run_against_reference(b.g, {b.out});
    EXPECT_EQ(cpu_impl_of(r.plan, "MatMul"), c.impl);
    const NodePlan* p = find_plan_of_op(r.plan, "MatMul");
    ASSERT_NE(p, nullptr);
    EXPECT_NE(p->reason.find(c.reason), std::string::npos) << p->reason;
  }
  // Gemm options the panels do not take.
  for (const auto& [attrs, reason] : std::vector<std::pair<Attributes, const char*>>{
           {{{"transA", int64_t{1}}}, "transA"}, {{{"alpha", 2.0}}, "alpha is not 1"}, {{{"beta", 0.5}}, "beta 1"}}) {
    ReferenceGraph g;
    const bool ta = attrs.has("transA");
    g.input("x", random_f32(ta ? Shape{300, 8} : Shape{8, 300}));
    g.initializer("w", random_f32({300, 200}));
    g.initializer("c", random_f32({200}));
    g.node("Gemm", {"x", "w", "c"}, "m", attrs);
    g.output("m");
    ReferenceRun r = run_against_reference(g, {"m"});
    const NodePlan* p = find_plan_of_op(r.plan, "Gemm");
    ASSERT_NE(p, nullptr);
    EXPECT_NE(p->reason.find(reason), std::string::npos) << p->reason;
  }
  // One row against an n x k B (Gemm's transB): the gemv loop's dot products; against a k x n
  // B the panels take it, and 2 to 4 rows against either.
  for (const auto& [rows, tb, impl] : std::vector<std::tuple<int64_t, bool, const char*>>{
           {1, true, "gemv"}, {1, false, "panels"}, {2, true, "panels"}, {4, false, "panels"}}) {
    SCOPED_TRACE(str(rows, " rows, transB ", tb));
    ReferenceGraph gg;
    gg.input("x", random_f32({rows, 300}));
    gg.initializer("w", random_f32(tb ? Shape{700, 300} : Shape{300, 700}, -0.1, 0.1));
    gg.initializer("c", random_f32({700}));
    gg.node("Gemm", {"x", "w", "c"}, "m", {{"transB", int64_t{tb ? 1 : 0}}});
    gg.output("m");
    ReferenceRun rr = run_against_reference(gg, {"m"});
    EXPECT_EQ(cpu_impl_of(rr.plan, "Gemm"), impl);
    if (std::string(impl) == "gemv") {
      const NodePlan* p = find_plan_of_op(rr.plan, "Gemm");
      ASSERT_NE(p, nullptr);
      EXPECT_NE(p->reason.find("one row against an n x k B"), std::string::npos) << p->reason;
    }
  }
  // B computed in the graph (not a session constant).
  ReferenceGraph g;
  g.input("x", random_f32({8, 300}));
  g.input("w", random_f32({300, 200}));
  g.node("MatMul", {"x", "w"}, "m");
  g.output("m");
  ReferenceRun r = run_against_reference(g, {"m"});
  const NodePlan* p = find_plan_of_op(r.plan, "MatMul");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("not a session constant"), std::string::npos) << p->reason;
}


// A session computing in bf16 (Precision::bf16) runs its MatMuls and Gemms against a constant
// B past 2^15 elements on the bf16 panels (panels.hpp) where the CPU has AVX-512 BF16: against
// the float64 reference within bf16's bound (tests/precision_util.hpp), at row counts around a
// pass's 12 and up to the 64 they take, with a partial last panel, an odd K (the last pair's
// zero half), A's batches folded into rows, the fused bias and Relu (applied to every row's
// sums of a panel at once), on one and two threads, the next panel prefetched or not; each
// session run twice (the second reuses the packed panels).
TEST(CpuPanels, Bf16MatchesTheReference) {
  SKIP_WITHOUT_CPU_BF16();
  if (!cpu::panel_bf16_available()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU: bf16 products go to oneDNN";
  for (bool two : {false, true}) {
    std::optional<TwoThreads> threads;
    if (two) threads.emplace();
    for (const Shape& a : {Shape{1, 33}, Shape{5, 33}, Shape{11, 301}, Shape{12, 768}, Shape{13, 301}, Shape{17, 768},
                           Shape{25, 33}, Shape{2, 7, 301}, Shape{64, 768}})
      for (int64_t n : {int64_t{96}, int64_t{131}, int64_t{1000}})
        for (bool fused : {false, true}) {
          const int64_t k = a.back();
          if (k * n < (int64_t{1} << 15)) continue;  // stays in cache: onednn (DeclinesWithAReason)
          ConstantsCached cached(fused);
          SCOPED_TRACE(str(shape_str(a), " x ", n, fused ? ", bias and Relu" : "", two ? ", two threads" : "", ", ",
                           ConstantsCached::name(fused), " (seed ", seed(), ")"));
          Built b = build(a, n, fused, fused);
          Session s(b.g.model(), with_precision(Precision::bf16));
          const std::vector<NodePlan> plan = s.plan(b.g.inputs());
          EXPECT_EQ(cpu_impl_of(plan, "MatMul"), "panels");
          for (int run = 0; run < 2; ++run)
            expect_low_precision_result(s.run(b.g.inputs()).at(0), b.g.reference(b.out), DType::bf16, k,
                                        str("run ", run));
        }
  }
}

// Gemm in bf16 on the panels: B as stored or transposed (a Linear layer's n x k weight), C as a
// bias row, one row and a few.
TEST(CpuPanels, Bf16GemmEitherLayoutOfB) {
  SKIP_WITHOUT_CPU_BF16();
  if (!cpu::panel_bf16_available()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU: bf16 products go to oneDNN";
  for (int64_t rows : {1, 9, 40})
    for (bool tb : {false, true})
      for (bool c : {false, true}) {
        SCOPED_TRACE(str(rows, " rows, transB ", tb, c ? ", C" : "", " (seed ", seed(), ")"));
        const int64_t k = 299;
        ReferenceGraph g = gemm_graph(rows, k, 161, tb, c, false);
        Session s(g.model(), with_precision(Precision::bf16));
        EXPECT_EQ(cpu_impl_of(s.plan(g.inputs()), "Gemm"), "panels");
        expect_low_precision_result(s.run(g.inputs()).at(0), g.reference("y"), DType::bf16, k, "y");
      }
}

// Past 64 rows, and against a B that stays in cache, bf16 products go to oneDNN, saying why.
TEST(CpuPanels, Bf16DeclinesWithAReason) {
  SKIP_WITHOUT_CPU_BF16();
  struct Case {
    Shape a;
    int64_t n;
    const char* reason;
  };
  const std::string no_bf16 = "no AVX-512 BF16";
  for (const Case& c : std::vector<Case>{{{65, 300}, 700, "enough reuse of B for oneDNN's bf16 GEMM"},
                                         {{8, 64}, 64, "stays in cache"}}) {
    SCOPED_TRACE(shape_str(c.a));
    Built b = build(c.a, c.n, false, false);
    Session s(b.g.model(), with_precision(Precision::bf16));
    const std::vector<NodePlan> plan = s.plan(b.g.inputs());
    EXPECT_EQ(cpu_impl_of(plan, "MatMul"), "onednn");
    const NodePlan* p = find_plan_of_op(plan, "MatMul");
    ASSERT_NE(p, nullptr);
    EXPECT_NE(p->reason.find(cpu::panel_bf16_available() ? std::string(c.reason) : no_bf16), std::string::npos)
        << p->reason;
    expect_low_precision_result(s.run(b.g.inputs()).at(0), b.g.reference(b.out), DType::bf16, c.a.back(), "y");
  }
}

}  // namespace
}  // namespace porta::test
