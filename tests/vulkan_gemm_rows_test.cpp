// Gemm's "rows" kernel of CPU-like Vulkan devices (kernels/vulkan/matmul_rows.comp: at most 4
// rows of A against B stored (N, K), the lanes of a subgroup sharing each row of B): against the
// float64 reference and the "texel" kernel after it, with NaN-poisoned outputs. Shapes around
// its cuts: N around the 4 rows of B a subgroup takes per pass and a workgroup's rows, K below
// one texel per lane, not a multiple of 4 (padded B) and long, every broadcast of C, alpha and
// beta, K = 0, f16, grids past the device's workgroup count along x, the loop cap, the fused
// activation through a session, and what it declines.
#include <gtest/gtest.h>

#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "porta/session.hpp"
#include "tests/reference_graph.hpp"
#include "tests/vulkan_texel_test_util.hpp"

namespace porta::test {
namespace {

struct Case {
  std::vector<Tensor> inputs;
  Attributes attrs;
};

std::vector<Case> cases(DType dt) {
  auto in = [&](const Shape& s) { return random_input(s, dt); };
  const Attributes tb{{"transB", int64_t{1}}};
  Attributes scaled = tb;
  scaled.set("alpha", 0.5);
  scaled.set("beta", -2.0);
  return {
      {{in({1, 4}), in({1, 4})}, tb},                       // one texel, one row
      {{in({1, 64}), in({1000, 64}), in({1000})}, tb},       // a classifier head
      {{in({1, 300}), in({3, 300}), in({3})}, tb},          // N below one pass of 4 rows
      {{in({2, 36}), in({33, 36}), in({2, 33})}, scaled},  // N past a workgroup's 32 rows, C (M, N)
      {{in({3, 7}), in({5, 7}), in({3, 1})}, tb},           // K = 7: B padded; C (M, 1)
      {{in({4, 1027}), in({37, 1027}), in({1, 1})}, scaled},  // the most rows, K odd and long
      {{in({4, 12}), in({9, 12})}, tb},                     // no C; K below one texel per lane
      {{in({1, 8192}), in({6, 8192}), in({6})}, tb},        // many texels per lane
      {{in({2, 0}), in({5, 0}), in({5})}, scaled},          // K = 0: beta * C
  };
}

void run_cases(DType dt) {
  for (const Case& c : cases(dt)) {
    SCOPED_TRACE(testing::Message() << dtype_name(dt) << " " << shape_str(c.inputs[0].shape()) << " x "
                                    << shape_str(c.inputs[1].shape()));
    expect_impl_match("Gemm", c.inputs, c.attrs, "rows");
  }
  DisabledKernels texel_only("vulkan:Gemm:rows");
  for (const Case& c : cases(dt)) expect_impl_match("Gemm", c.inputs, c.attrs, "texel");
}

TEST(VulkanGemmRows, F32MatchesReferenceAndTheTexelKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU: \"rows\" is for CPU-like devices";
  run_cases(DType::f32);
}

TEST(VulkanGemmRows, F16MatchesReferenceAndTheTexelKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  if (!vk::context(0).caps().fp16_storage) GTEST_SKIP() << "no 16-bit storage";
  run_cases(DType::f16);
}

// Three workgroups along x at most: 1000 rows (32 per workgroup) spread over y too.
TEST(VulkanGemmRows, GridOverTwoAxes) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  vk::set_group_limit_override(0, 3);
  expect_impl_match("Gemm", {random_input({2, 40}), random_input({1000, 40}), random_input({1000})},
                    {{"transB", int64_t{1}}}, "rows");
  vk::set_group_limit_override(0, 0);
}

TEST(VulkanGemmRows, DeclinesWithReasons) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  const Attributes tb{{"transB", int64_t{1}}};
  // Five rows of A, B stored (K, N), A stored (K, M): "texel" and "tiled" take them.
  expect_impl_match("Gemm", {random_input({5, 16}), random_input({7, 16})}, tb, "texel", "5 rows of A");
  expect_impl_match("Gemm", {random_input({1, 16}), random_input({16, 7})}, {}, "texel", "transB");
  expect_impl_match("Gemm", {random_input({16, 1}), random_input({7, 16})},
                    {{"transA", int64_t{1}}, {"transB", int64_t{1}}}, "tiled", "transA");
  // Under a loop cap (800) "rows" takes a K whose loop "texel" cannot run (16384 / 4 texels
  // per invocation there, 16384 / 4 / 8 lanes here), but not twice that, which "tiled" splits.
  LoopCapOverride cap(800);
  expect_impl_match("Gemm", {random_input({1, 16384}), random_input({3, 16384})}, tb, "rows");
  expect_impl_match("Gemm", {random_input({1, 32768}), random_input({3, 32768})}, tb, "tiled", "K = 32768");
}

// x [m, k] -> Gemm(x, W, b, transB = 1) -> act, folded into the Gemm by a session.
TEST(VulkanGemmRows, SessionsApplyTheFusedActivation) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  for (const char* act : {"Relu", "Sigmoid", "HardSwish"}) {
    SCOPED_TRACE(str(act, " (seed ", seed(), ")"));
    ReferenceGraph g;
    g.input("x", random_f32({3, 130}, -2, 2));
    g.initializer("w", random_f32({70, 130}, -0.2, 0.2));
    g.initializer("b", random_f32({70}));
    g.node("Gemm", {"x", "w", "b"}, "y", {{"transB", int64_t{1}}});
    g.node(act, {"y"}, "out");
    g.output("out");
    SessionOptions o;
    o.device = Device::parse("vulkan:0");
    Session s(g.model(), o);
    const std::vector<NodePlan> plan = s.plan(g.inputs());
    ASSERT_EQ(plan.size(), 1u) << plan.back().node << ": " << plan.back().reason;
    EXPECT_NE(plan[0].reason.find("'rows'"), std::string::npos) << plan[0].reason;
    Comparison c = compare(s.run(g.inputs()).at(0), g.reference("out"), 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

}  // namespace
}  // namespace porta::test
