// Winograd Convs run as row blocks on two threads (kernels/cpu/conv.cpp, prepare_row_blocks):
// sessions whose 3x3 Conv sits between channels-last steps at batch 1 run its prepared calls
// as one primitive per block of output rows; each result is checked against the float64
// reference (first, prepared and unfused runs) and against the same session on one thread
// (one primitive over all rows): row counts that split evenly and unevenly (7 = 3 + 4), valid
// and padded convs, padding on the top or the bottom only, tall and narrow maps, a fused
// residual, activations fused as post-ops and after the primitive, and the calls that stay
// whole (batch 2, plain activations, maps too short, direct convs). Every conv has at least
// 2^24 direct multiply-adds (fewer per thread run direct: use_winograd) and at most 2 MB of
// transformed weights (more keep oneDNN's own split: kRowBlockMaxWeights); those whose blocks
// are padded unlike the whole map at most 512 KB (their blocks' F(4x4) weights must fit half
// of L2).
#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <vector>

#include "kernels/cpu/conv_common.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

bool has_winograd() { return dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core; }

Tensor weights(const Shape& w) {
  const double fan_in = static_cast<double>(shape_numel(w) / w[0]);
  const double r = 1.7 / std::sqrt(fan_in);
  return random_f32(w, -r, r);
}

struct RowCase {
  std::string name;
  Shape x, w;
  Attributes attrs;
};

struct Built {
  ReferenceGraph g;
  std::string out;
};

// x -> 1x1 Conv -> Conv "c" (+ r) (-> activation) -> 1x1 Conv -> out: with `between`, the
// 1x1 convs keep Conv "c"'s input and output channels-last; without, "c" reads the graph input
// and writes the graph output (plain).
Built build(const RowCase& c, bool between, const std::string& activation, bool residual) {
  Built b;
  ReferenceGraph& g = b.g;
  g.input("x", random_f32(c.x));
  std::string x = "x";
  if (between) {
    g.initializer("w0", weights({c.x[1], c.x[1], 1, 1}));
    g.node("Conv", {"x", "w0"}, "x0");
    x = "x0";
  }
  g.initializer("w", weights(c.w));
  g.initializer("b", random_f32({c.w[0]}));
  g.node("Conv", {x, "w", "b"}, "y", c.attrs);
  std::string y = "y";
  if (residual) {
    g.input("r", random_f32(g.reference("y").shape()));
    g.initializer("wr", weights({c.w[0], c.w[0], 1, 1}));
    g.node("Conv", {"r", "wr"}, "r0");
    g.node("Add", {y, "r0"}, "s");
    y = "s";
  }
  if (activation == "SiLU") {
    g.node("Sigmoid", {y}, "sig");
    g.node("Mul", {y, "sig"}, "a");
    y = "a";
  } else if (!activation.empty()) {
    g.node(activation, {y}, "a");
    y = "a";
  }
  if (between) {
    g.initializer("w9", weights({c.w[0], c.w[0], 1, 1}));
    g.node("Conv", {y, "w9"}, "out");
    y = "out";
  }
  g.output(y);
  b.out = y;
  return b;
}

// Runs `g` against the reference on two threads and on one, compares the two, and returns
// how many prepared calls ran as row blocks on two threads.
uint64_t blocks_run(const Built& b) {
  const ReferenceGraph& g = b.g;
  Tensor two;
  uint64_t before = 0, after = 0;
  {
    TwoThreads threads;
    before = cpu::conv_row_block_runs();
    run_against_reference(g, {b.out});
    Session s(g.model());
    s.run(g.inputs());
    two = s.run(g.inputs()).at(0);  // prepared
    after = cpu::conv_row_block_runs();
  }
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  Session one(g.model());
  one.run(g.inputs());
  const Tensor whole = one.run(g.inputs()).at(0);
  omp_set_num_threads(saved);
  Comparison agree = compare(two, whole, 1e-5);
  EXPECT_TRUE(agree.ok) << "two threads against one: " << agree.message;
  return after - before;
}

const std::vector<RowCase>& split_cases() {
  using V = std::vector<int64_t>;
  static const std::vector<RowCase> cases = {
      {"64->144 over 15x15 (blocks of 7 and 8 rows)", {1, 64, 15, 15}, {144, 64, 3, 3}, {{"pads", V{1, 1, 1, 1}}}},
      {"64->128 over 16x16", {1, 64, 16, 16}, {128, 64, 3, 3}, {{"pads", V{1, 1, 1, 1}}}},
      {"48->64 over 7x88 (3 + 4 rows)", {1, 48, 7, 88}, {64, 48, 3, 3}, {{"pads", V{1, 1, 1, 1}}}},
      {"valid 96->144, 15x13 -> 13x11", {1, 96, 15, 13}, {144, 96, 3, 3}, {}},
      {"pads top 1, bottom 0", {1, 48, 12, 56}, {64, 48, 3, 3}, {{"pads", V{1, 1, 0, 1}}}},
      {"pads top 0, bottom 1", {1, 48, 12, 56}, {64, 48, 3, 3}, {{"pads", V{0, 1, 1, 1}}}},
      {"tall and narrow, 65x10", {1, 48, 65, 10}, {64, 48, 3, 3}, {{"pads", V{1, 1, 1, 1}}}},
  };
  return cases;
}

TEST(ConvRowBlocks, MatchReferenceAndOneThread) {
  for (const RowCase& c : split_cases()) {
    SCOPED_TRACE(c.name + " (seed " + std::to_string(seed()) + ")");
    const uint64_t runs = blocks_run(build(c, true, "", false));
    if (has_winograd()) EXPECT_GT(runs, 0u) << "the conv should have run as row blocks";
  }
}

TEST(ConvRowBlocks, FusedResidualAndActivations) {
  const RowCase& c = split_cases().at(0);
  for (const char* act : {"", "Relu", "Sigmoid", "SiLU"})
    for (bool residual : {false, true}) {
      SCOPED_TRACE(str(act[0] ? act : "no activation", residual ? " after a residual" : "", " (seed ", seed(), ")"));
      const uint64_t runs = blocks_run(build(c, true, act, residual));
      if (has_winograd()) EXPECT_GT(runs, 0u) << "the conv should have run as row blocks";
    }
}

// Calls that stay one primitive: batches (rows of one image are not a contiguous slice of all),
// plain activations on either side, maps too short for two blocks of 3 rows, and convs that
// are not Winograd (too few multiply-adds per thread, pads oneDNN's Winograd does not take).
TEST(ConvRowBlocks, WholeWhereBlocksDoNotApply) {
  using V = std::vector<int64_t>;
  const Attributes pads{{"pads", V{1, 1, 1, 1}}};
  struct Whole {
    RowCase c;
    bool between;
  };
  const std::vector<Whole> cases = {
      {{"batch 2", {2, 64, 15, 15}, {144, 64, 3, 3}, pads}, true},
      // 1 M multiply-adds: direct, not Winograd, on two threads (it ran as row blocks before)
      {{"16->32 over 15x15", {1, 16, 15, 15}, {32, 16, 3, 3}, pads}, true},
      {{"graph input and output", {1, 64, 15, 15}, {144, 64, 3, 3}, pads}, false},
      {{"5 rows", {1, 96, 5, 28}, {144, 96, 3, 3}, pads}, true},
      // oneDNN has no Winograd kernel for pads past 1 or pads of 2 on one side: direct, whole
      {{"pads 2", {1, 96, 9, 11}, {144, 96, 3, 3}, {{"pads", V{2, 2, 2, 2}}}}, true},
      {{"pads top 0, bottom 2", {1, 96, 9, 16}, {144, 96, 3, 3}, {{"pads", V{0, 1, 2, 1}}}}, true},
  };
  for (const Whole& w : cases) {
    SCOPED_TRACE(w.c.name + " (seed " + std::to_string(seed()) + ")");
    EXPECT_EQ(blocks_run(build(w.c, w.between, "", false)), 0u);
  }
}

}  // namespace
}  // namespace porta::test
