// The cpu Conv for small output maps ("small_map", kernels/cpu/conv_small_map.cpp): sessions
// whose Conv has at most 16 output pixels and weights past 2^17 elements run it; each result is
// checked against the float64 reference (with and without graph fusion, and on the prepared
// second run) and against the onednn implementation the kernel replaces: 1-, 2- and 3-D convs,
// strides, dilations, asymmetric pads, taps that read only padding, output channels that leave
// a partial panel, batches, 1 to 16 pixels (one and two passes over each panel), a fused
// residual and every fused activation, with the activations plain (graph inputs and outputs)
// and in the channels-last layout between convs, on one thread and on two; dilated convs past
// 16 pixels whose taps mostly read padding, tap by tap. And the calls it declines, with the
// reason.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/panels.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/conv_graph.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/precision_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

const std::vector<ConvCase>& taken_cases() {
  using V = std::vector<int64_t>;
  static const std::vector<ConvCase> cases = {
      {"3x3 over 2x2, 120 channels (a partial panel)", {1, 128, 2, 2}, {120, 128, 3, 3}, {{"pads", V{1, 1, 1, 1}}}},
      {"3x3 stride 2, 4x4 -> 2x2, no bias", {1, 192, 4, 4}, {80, 192, 3, 3},
       {{"pads", V{1, 1, 1, 1}}, {"strides", V{2, 2}}}, false},
      {"1x1 over 4x4: 16 pixels, two passes", {1, 512, 4, 4}, {264, 512, 1, 1}, {}},
      {"3x3 dilation 2, asymmetric pads, 3x3 pixels", {1, 256, 3, 3}, {130, 256, 3, 3},
       {{"pads", V{2, 1, 2, 3}}, {"dilations", V{2, 2}}}},
      {"batch 3 over 2x2: 12 pixels", {3, 160, 2, 2}, {96, 160, 3, 3}, {{"pads", V{1, 1, 1, 1}}}},
      {"3x3 over 1x1: only the centre tap reads the input", {1, 448, 1, 1}, {384, 448, 3, 3}, {{"pads", V{1, 1, 1, 1}}}},
      {"1-D, kernel 3 over 5", {1, 256, 5}, {200, 256, 3}, {}},
      {"3-D, 3x3x3 over 2x2x2", {1, 64, 2, 2, 2}, {80, 64, 3, 3, 3}, {{"pads", V{1, 1, 1, 1, 1, 1}}}},
      {"1x1 over one pixel, 1 output channel short of a panel", {1, 2048, 1, 1}, {95, 2048, 1, 1}, {}},
  };
  return cases;
}

TEST(ConvSmallMap, MatchesReferenceAndOneDnnInBothLayouts) {
  for (const ConvCase& c : taken_cases())
    for (bool layout : {false, true}) expect_impl_matches_onednn(c, layout, "small_map");
}

// The same with the panels split over two threads (from 16 Ki weights per thread), and with
// the thresholds scaled down so that every product of fewer than 4 panels splits into units
// of (panel, column pass, rows) (panels.hpp, panel_units).
TEST(ConvSmallMap, PanelsSplitOverTwoThreads) {
  TwoThreads threads;
  for (double scale : {1.0, 1e-3}) {
    cpu::set_parallel_scale(scale);
    for (const ConvCase& c : taken_cases())
      for (bool layout : {false, true}) {
        SCOPED_TRACE(c.name + (layout ? ", channels-last" : ", plain") + (scale < 1 ? ", units" : "") + " (seed " +
                     std::to_string(seed()) + ")");
        Built b = build(c, layout, "Relu", true);
        ReferenceRun r = run_against_reference(b.g, {b.out});
        EXPECT_EQ(cpu_impl_of(r.plan, b.conv), "small_map");
      }
  }
}

// Every pixel count the kernel takes (1 to 16: one pass over each panel up to the width's
// rows per pass, 12 with AVX-512 and 6 with AVX2 or SSE, two or three after), at every vector
// width this CPU runs (the blockings differ: kernels/cpu/conv_small_map.cpp), and a case of
// each kind at each width. Even pixel counts as if the session's constants stayed in cache
// (no prefetch of the next panel), odd ones as if they streamed.
TEST(ConvSmallMap, EveryPixelCountAtEveryVectorWidth) {
  for (int width : cpu_vector_widths()) {
    VectorWidth narrow(width);
    for (int64_t pixels = 1; pixels <= 16; ++pixels) {
      ConstantsCached cached(pixels % 2 == 0);
      SCOPED_TRACE(str(pixels, " pixels, ", VectorWidth::name(width), ", ", ConstantsCached::name(pixels % 2 == 0),
                       " (seed ", seed(), ")"));
      Built b = build({"1-D 1x1", {1, 384, pixels}, {352, 384, 1}, {}}, false, "", false);
      ReferenceRun r = run_against_reference(b.g, {b.out});
      EXPECT_EQ(cpu_impl_of(r.plan, b.conv), "small_map");
    }
    for (const ConvCase& c : taken_cases()) {
      SCOPED_TRACE(c.name + ", " + VectorWidth::name(width) + " (seed " + std::to_string(seed()) + ")");
      Built b = build(c, true, "Relu", true);
      ReferenceRun r = run_against_reference(b.g, {b.out});
      EXPECT_EQ(cpu_impl_of(r.plan, b.conv), "small_map");
    }
  }
}

TEST(ConvSmallMap, FusedResidualAndEveryActivation) { expect_fused_residual_and_activations(taken_cases().at(0), "small_map"); }

// In a bf16 session the kernel computes in bf16 inside (porta_compute) with the bf16 panels
// where the CPU has AVX-512 BF16: every case above, plain and channels-last, with a fused
// residual and Relu, on one thread and two, each session run twice (the second reuses the
// packed panels), against the float64 reference within bf16's bound (tests/precision_util.hpp;
// channels-last, the 1x1 convs around it compute in bf16 too, so the bound takes their terms
// as well, doubled). Past 16 pixels it declines in bf16 (tap by tap is f32 only).
TEST(ConvSmallMap, Bf16InsideOnAvx512Bf16) {
  SKIP_WITHOUT_CPU_BF16();
  if (!cpu::panel_bf16_available()) GTEST_SKIP() << "no AVX-512 BF16 on this CPU: bf16 convs go to oneDNN";
  for (bool two : {false, true}) {
    std::optional<TwoThreads> threads;
    if (two) threads.emplace();
    for (const ConvCase& c : taken_cases())
      for (bool layout : {false, true}) {
        SCOPED_TRACE(c.name + (layout ? ", channels-last" : ", plain") + (two ? ", two threads" : "") + " (seed " +
                     std::to_string(seed()) + ")");
        Built b = build(c, layout, "Relu", true);
        Session s(b.g.model(), with_precision(Precision::bf16));
        EXPECT_EQ(cpu_impl_of(s.plan(b.g.inputs()), b.conv), "small_map");
        const int64_t k = shape_numel(c.w) / c.w[0];
        const int64_t terms = layout ? 4 * (k + c.x[1] + 2 * c.w[0]) : k;
        for (int run = 0; run < 2; ++run)
          expect_low_precision_result(s.run(b.g.inputs()).at(0), b.g.reference(b.out), DType::bf16, terms,
                                      str("run ", run));
      }
  }
  const ConvCase& wide = {"3x3 over 5x5: 25 pixels", {1, 128, 5, 5}, {96, 128, 3, 3},
                          {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}};
  Built b = build(wide, false, "", false);
  Session s(b.g.model(), with_precision(Precision::bf16));
  const std::vector<NodePlan> plan = s.plan(b.g.inputs());
  EXPECT_EQ(cpu_impl_of(plan, b.conv), "onednn");
  const NodePlan* p = find_plan_of_op(plan, "Conv");
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->reason.find("25 output pixels in bf16"), std::string::npos) << p->reason;
}

// Dilated convs whose taps mostly read padding, past 16 pixels: tap by tap, up to
// panel_tap_max_rows() pixels (64 at the AVX2 width, which these run at; 16 with
// AVX-512), against the reference and the onednn implementation, in both layouts, with a fused
// residual and activation, on one thread and two.
const std::vector<ConvCase>& by_tap_cases() {
  using V = std::vector<int64_t>;
  static const std::vector<ConvCase> cases = {
      {"fcn's 3x3 dilation 4 over 8x8: 64 pixels, 4 of 9 taps inside", {1, 96, 8, 8}, {72, 96, 3, 3},
       {{"pads", V{4, 4, 4, 4}}, {"dilations", V{4, 4}}}},
      {"batch 2, dilation 2 over 4x4: 32 pixels", {2, 64, 4, 4}, {40, 64, 3, 3},
       {{"pads", V{2, 2, 2, 2}}, {"dilations", V{2, 2}}}, false},
      {"asymmetric pads and dilations, 5x6 pixels", {1, 48, 5, 6}, {33, 48, 3, 3},
       {{"pads", V{3, 4, 3, 4}}, {"dilations", V{3, 4}}}},
      {"stride 2 with dilation 5 over 9x9 -> 5x5", {1, 40, 9, 9}, {64, 40, 3, 3},
       {{"pads", V{5, 5, 5, 5}}, {"dilations", V{5, 5}}, {"strides", V{2, 2}}}},
      {"1-D, dilation 20 over 24", {1, 64, 24}, {48, 64, 3}, {{"pads", V{20, 20}}, {"dilations", V{20}}}},
  };
  return cases;
}

TEST(ConvSmallMap, DilatedConvsTapByTap) {
  if (cpu::vector_bytes() < 32) GTEST_SKIP() << "no AVX2 here: the kernel takes 16 pixels at this width";
  VectorWidth avx2(32);
  // One thread; two; two with every product of fewer than 4 panels split into units.
  for (int mode : {0, 1, 2}) {
    const bool two = mode > 0;
    std::optional<TwoThreads> threads;
    if (two) threads.emplace();
    if (mode == 2) cpu::set_parallel_scale(1e-3);
    for (const ConvCase& c : by_tap_cases())
      for (bool layout : {false, true}) {
        SCOPED_TRACE(c.name + (layout ? ", channels-last" : ", plain") + (two ? ", two threads" : "") +
                     (mode == 2 ? ", units" : "") + " (seed " + std::to_string(seed()) + ")");
        Built b = build(c, layout, layout ? "Relu" : "", layout);
        ReferenceRun r = run_against_reference(b.g, {b.out});
        EXPECT_EQ(cpu_impl_of(r.plan, b.conv), "small_map");
        Tensor onednn;
        {
          DisabledKernels off("cpu:Conv:small_map");
          Session s(b.g.model());
          onednn = s.run(b.g.inputs()).at(0);
        }
        Comparison agree = compare(r.outputs.at(0), onednn, 1e-5);
        EXPECT_TRUE(agree.ok) << "against onednn: " << agree.message;
      }
  }
}

TEST(ConvSmallMap, DeclinesWithAReason) {
  using V = std::vector<int64_t>;
  struct Declined {
    ConvCase c;
    const char* reason;
  };
  const std::vector<Declined> cases = {
      {{"17 pixels", {1, 512, 1, 17}, {264, 512, 1, 1}, {}}, "17 output pixels"},
      {{"few weights", {1, 16, 2, 2}, {16, 16, 3, 3}, {{"pads", V{1, 1, 1, 1}}}}, "the kernel starts at"},
      {{"grouped", {1, 256, 2, 2}, {256, 128, 3, 3}, {{"pads", V{1, 1, 1, 1}}, {"group", int64_t{2}}}}, "grouped"},
      // 8x8 at dilation 2 reads the input for 20 of 24 (pixel, tap) pairs per axis: not tap by tap.
      {{"dilated, mostly inside", {1, 96, 8, 8}, {72, 96, 3, 3}, {{"pads", V{2, 2, 2, 2}}, {"dilations", V{2, 2}}}},
       "64 output pixels"},
      // Mostly padding but not dilated: oneDNN's direct kernels skip padding themselves.
      {{"undilated", {1, 96, 3, 9}, {72, 96, 7, 7}, {{"pads", V{3, 3, 3, 3}}}}, "27 output pixels"},
  };
  for (const Declined& d : cases) expect_declined(d.c, "small_map", d.reason);
  // Weights that are a graph input, not a session constant.
  ReferenceGraph g;
  g.input("x", random_f32({1, 128, 2, 2}));
  g.input("w", weights({120, 128, 3, 3}));
  g.node("Conv", {"x", "w"}, "y", {{"pads", V{1, 1, 1, 1}}});
  g.output("y");
  ReferenceRun r = run_against_reference(g, {"y"});
  EXPECT_EQ(cpu_impl_of(r.plan, "Conv_0"), "onednn");
}

}  // namespace
}  // namespace porta::test
