// The cpu Conv for groups of a multiple of 8 output channels ("grouped",
// kernels/cpu/conv_grouped.cpp): sessions whose grouped 2-D Conv has such groups run it; each
// result is checked against the float64 reference (with and without graph fusion, and on the
// prepared second run) and against the onednn implementation it replaces: 8 to 40 channels per
// group (chunks of one to four vectors, and a group cut in two chunks), input channels per group
// that leave a partial run of 8, strides (the planes' phases), dilations, asymmetric pads, taps
// that read only padding, maps of one pixel to past a block's rows and columns (odd widths: the
// computed columns past the map), batches, a fused residual and every fused activation, with
// the activations plain and channels-last, on one thread and on two, at every vector width this
// CPU runs. And the calls it declines, with the reason.
#include <optional>
#include <string>
#include <vector>

#include "tests/conv_graph.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

Attributes grouped(int64_t group, std::vector<int64_t> pads, std::vector<int64_t> strides = {1, 1},
                   std::vector<int64_t> dilations = {1, 1}) {
  return {{"group", group}, {"pads", std::move(pads)}, {"strides", std::move(strides)}, {"dilations", std::move(dilations)}};
}

const std::vector<ConvCase>& taken_cases() {
  using V = std::vector<int64_t>;
  static const std::vector<ConvCase> cases = {
      {"8 per group, 3x3 over 8x8 (regnet)", {1, 104, 8, 8}, {104, 8, 3, 3}, grouped(13, V{1, 1, 1, 1})},
      {"16 per group, stride 2 over 9x9 -> 5x5, no bias", {1, 64, 9, 9}, {64, 16, 3, 3},
       grouped(4, V{1, 1, 1, 1}, V{2, 2}), false},
      {"24 per group (3 vectors), dilation 2, asymmetric pads, 7x11", {1, 72, 7, 11}, {72, 24, 3, 3},
       grouped(3, V{2, 1, 2, 3}, V{1, 1}, V{2, 2})},
      {"32 per group over 2x2 (resnext's last stage)", {1, 128, 2, 2}, {128, 32, 3, 3}, grouped(4, V{1, 1, 1, 1})},
      {"40 per group: a group in two chunks", {1, 80, 5, 5}, {80, 40, 3, 3}, grouped(2, V{1, 1, 1, 1})},
      {"12 in, 16 out per group: a partial run of input channels", {1, 48, 6, 6}, {64, 12, 3, 3},
       grouped(4, V{1, 1, 1, 1})},
      {"batch 3, 1x3 kernel, stride (2, 1)", {3, 32, 6, 7}, {32, 8, 1, 3}, grouped(4, V{0, 1, 0, 1}, V{2, 1})},
      {"3x3 over 1x1: only the centre tap reads the input", {1, 64, 1, 1}, {64, 8, 3, 3}, grouped(8, V{1, 1, 1, 1})},
      {"5x5, stride 3, over 29x37: blocks past the rows and columns", {1, 16, 29, 37}, {16, 8, 5, 5},
       grouped(2, V{2, 2, 2, 2}, V{3, 3})},
      {"depthwise-like: 8 output channels from 1 input channel per group", {1, 6, 10, 10}, {48, 1, 3, 3},
       grouped(6, V{1, 1, 1, 1})},
  };
  return cases;
}

TEST(ConvGrouped, MatchesReferenceAndOneDnnInBothLayouts) {
  for (const ConvCase& c : taken_cases())
    for (bool layout : {false, true}) expect_impl_matches_onednn(c, layout, "grouped");
}

// Every case with a fused residual and Relu, on two threads (from the kernel's own threshold:
// the groups' blocks split over the call's budget), at every vector width this CPU runs.
TEST(ConvGrouped, TwoThreadsAndEveryVectorWidth) {
  TwoThreads threads;
  for (int width : cpu_vector_widths()) {
    VectorWidth narrow(width);
    for (const ConvCase& c : taken_cases())
      for (bool layout : {false, true}) {
        SCOPED_TRACE(c.name + (layout ? ", channels-last, " : ", plain, ") + VectorWidth::name(width) + " (seed " +
                     std::to_string(seed()) + ")");
        Built b = build(c, layout, "Relu", true);
        ReferenceRun r = run_against_reference(b.g, {b.out});
        EXPECT_EQ(cpu_impl_of(r.plan, b.conv), "grouped");
      }
  }
}

TEST(ConvGrouped, FusedResidualAndEveryActivation) { expect_fused_residual_and_activations(taken_cases().at(0), "grouped"); }

// Many groups and blocks: 512 groups of 8 over 13x13 (more items than any split), and an input
// holding infinities and NaNs (they reach exactly the outputs whose taps read them).
TEST(ConvGrouped, ManyGroupsAndNonFiniteInputs) {
  using V = std::vector<int64_t>;
  {
    Built b = build({"512 groups of 8", {1, 4096, 13, 13}, {4096, 8, 3, 3}, grouped(512, V{1, 1, 1, 1})}, false, "Relu",
                    false);
    ReferenceRun r = run_against_reference(b.g, {b.out});
    EXPECT_EQ(cpu_impl_of(r.plan, b.conv), "grouped");
  }
  ReferenceGraph g;
  Tensor x = random_f32({1, 16, 5, 5});
  x.data<float>()[3] = INFINITY;                  // channel 0 (group 0), pixel (0, 3)
  x.data<float>()[8 * 25 + 12] = std::nanf("");  // channel 8 (group 1), pixel (2, 2)
  g.input("x", x);
  g.initializer("w", weights({16, 8, 3, 3}));
  g.node("Conv", {"x", "w"}, "y", grouped(2, V{1, 1, 1, 1}));
  g.output("y");
  Session s(g.model());
  EXPECT_EQ(cpu_impl_of(s.plan(g.inputs()), "Conv_0"), "grouped");
  Tensor y = s.run(g.inputs()).at(0);
  Tensor onednn;
  {
    DisabledKernels off("cpu:Conv:grouped");
    onednn = Session(g.model()).run(g.inputs()).at(0);
  }
  const float* a = y.data<float>();
  const float* o = onednn.data<float>();
  int64_t nonfinite = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    const int64_t channel = i / 25, pixel = i % 25, row = pixel / 5, col = pixel % 5;
    // Group 0's outputs within one pixel of (0, 3) read the infinity; group 1's within one of (2, 2) the NaN.
    const bool reads = channel < 8 ? row <= 1 && col >= 2 : row >= 1 && row <= 3 && col >= 1 && col <= 3;
    EXPECT_EQ(std::isfinite(a[i]), !reads) << "output " << i;
    EXPECT_EQ(std::isfinite(a[i]), std::isfinite(o[i])) << "output " << i;
    if (std::isfinite(a[i])) EXPECT_NEAR(a[i], o[i], 1e-4 * (1 + std::abs(o[i]))) << "output " << i;
    nonfinite += !std::isfinite(a[i]);
  }
  EXPECT_EQ(nonfinite, 8 * 6 + 8 * 9);
}

TEST(ConvGrouped, DeclinesWithAReason) {
  using V = std::vector<int64_t>;
  struct Declined {
    ConvCase c;
    const char* reason;
  };
  const std::vector<Declined> cases = {
      {{"4 per group", {1, 32, 6, 6}, {32, 4, 3, 3}, grouped(8, V{1, 1, 1, 1})}, "4 output channels per group"},
      {{"12 per group", {1, 48, 6, 6}, {48, 12, 3, 3}, grouped(4, V{1, 1, 1, 1})}, "12 output channels per group"},
      {{"depthwise", {1, 32, 6, 6}, {32, 1, 3, 3}, grouped(32, V{1, 1, 1, 1})}, "1 output channels per group"},
      {{"not grouped", {1, 16, 6, 6}, {16, 16, 3, 3}, {{"pads", V{1, 1, 1, 1}}}}, "not a grouped conv"},
      {{"1-D", {1, 32, 9}, {32, 8, 3}, {{"group", int64_t{4}}, {"pads", V{1, 1}}}}, "the kernel takes 2-D convs"},
  };
  for (const Declined& d : cases) expect_declined(d.c, "grouped", d.reason);
  // Weights that are a graph input, not a session constant.
  ReferenceGraph g;
  g.input("x", random_f32({1, 32, 4, 4}));
  g.input("w", weights({32, 8, 3, 3}));
  g.node("Conv", {"x", "w"}, "y", grouped(4, V{1, 1, 1, 1}));
  g.output("y");
  ReferenceRun r = run_against_reference(g, {"y"});
  EXPECT_EQ(cpu_impl_of(r.plan, "Conv_0"), "onednn");
}

}  // namespace
}  // namespace porta::test
