// Gemm's "rows" kernel of CPU-like Vulkan devices (kernels/vulkan/matmul_rows.comp: at most 8
// rows of A against W packed by pack_rows.comp, 4 rows of W per invocation, 8 from 4 rows of A
// on; a W larger than half a binding stored (N, K) read in place, the lanes of a subgroup
// sharing each row): against the float64 reference and the "texel" kernel after it, with
// NaN-poisoned outputs. Shapes around its cuts: N around the rows of an invocation and the
// packed blocks of 32 and 64, K below one texel, not a multiple of 4 (zero in the packed W, A
// padded) and long, B stored (K, N) and (N, K), 1 to 8 rows of A, every broadcast of C, alpha
// and beta, f16, grids past the device's workgroup count along x, the in-place path and a
// packing split over bindings under a small binding limit, the loop cap, the fused activation
// through a session, and what it declines.
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
  Attributes scaled_kn = scaled;
  scaled_kn.set("transB", int64_t{0});
  return {
      {{in({1, 4}), in({1, 4})}, tb},                          // one texel, one row
      {{in({1, 64}), in({1000, 64}), in({1000})}, tb},          // a classifier head
      {{in({1, 300}), in({3, 300}), in({3})}, tb},             // N below one invocation's 4 rows
      {{in({2, 36}), in({33, 36}), in({2, 33})}, scaled},      // N past a block of 32, C (M, N)
      {{in({3, 7}), in({5, 7}), in({3, 1})}, tb},              // K = 7: A padded, W zero past K; C (M, 1)
      {{in({8, 1027}), in({37, 1027}), in({1, 1})}, scaled},   // the most rows, K odd and long
      {{in({5, 12}), in({64, 12})}, tb},                       // no C; two whole blocks
      {{in({1, 8192}), in({6, 8192}), in({6})}, tb},           // long K
      {{in({6, 30}), in({30, 65}), in({65})}, {}},             // B stored (K, N)
      {{in({7, 9}), in({9, 31}), in({7, 31})}, scaled_kn},     // (K, N), K = 9, C (M, N)
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

// MatMul against a 1-D or 2-D B (a Linear layer exported as MatMul): the rows of A's leading
// axes folded (at most 8), B stored (K, N) and packed.
void run_matmul_cases(DType dt) {
  auto in = [&](const Shape& s) { return random_input(s, dt); };
  const std::vector<std::vector<Tensor>> cases = {
      {in({1, 64}), in({64, 100})},     // a Linear layer at batch 1
      {in({1, 3, 37}), in({37, 70})},   // 3 folded rows, K = 37
      {in({2, 4, 16}), in({16, 33})},   // 8 rows, N past a block of 32
      {in({5, 40}), in({40})},          // 1-D B: N = 1
      {in({40}), in({40, 9})},          // 1-D A: one row
  };
  for (const std::vector<Tensor>& c : cases) {
    SCOPED_TRACE(testing::Message() << dtype_name(dt) << " MatMul " << shape_str(c[0].shape()) << " x "
                                    << shape_str(c[1].shape()));
    expect_impl_match("MatMul", c, {}, "rows");
    DisabledKernels texel_only("vulkan:MatMul:rows");
    expect_impl_match("MatMul", c, {}, "texel");
  }
  // Nine rows, a B with batches: "texel" takes them.
  expect_impl_match("MatMul", {in({3, 3, 16}), in({16, 5})}, {}, "texel", "9 rows of A");
  expect_impl_match("MatMul", {in({2, 4, 8}), in({2, 8, 5})}, {}, "texel", "B has batches");
}

TEST(VulkanGemmRows, F32MatchesReferenceAndTheTexelKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU: \"rows\" is for CPU-like devices";
  for (bool shared : {true, false}) {  // matmul_rows.comp's A fetched per subgroup, or per lane
    SCOPED_TRACE(shared ? "A shared over the subgroup" : "A fetched per lane");
    SharedRowsOperand mode(shared);
    run_cases(DType::f32);
    run_matmul_cases(DType::f32);
  }
}

TEST(VulkanGemmRows, F16MatchesReferenceAndTheTexelKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  if (!vk::context(0).caps().fp16_storage) GTEST_SKIP() << "no 16-bit storage";
  for (bool shared : {true, false}) {
    SCOPED_TRACE(shared ? "A shared over the subgroup" : "A fetched per lane");
    SharedRowsOperand mode(shared);
    run_cases(DType::f16);
    run_matmul_cases(DType::f16);
  }
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

// Under a 50000-byte binding limit: a W of 28800 bytes (more than half of it, K a multiple of
// 4, stored (N, K)) is read in place; a W of 48000 bytes stored (K, N), 600 x 20 in f32 and
// 600 x 40 in f16, with 8 rows of A, is packed in 2 dispatches (10 blocks of 64 rows, 5120
// bytes each: 9 per binding).
TEST(VulkanGemmRows, InPlaceAndSplitPacking) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  vk::set_binding_limit_override(50000);
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    SCOPED_TRACE(dtype_name(dt));
    const int64_t k = dt == DType::f16 ? 720 : 360;  // W of 28800 bytes
    expect_impl_match("Gemm", {random_input({3, k}, dt), random_input({20, k}, dt), random_input({20}, dt)},
                      {{"transB", int64_t{1}}}, "rows");
    const int64_t k2 = dt == DType::f16 ? 40 : 20;
    expect_impl_match("Gemm", {random_input({8, k2}, dt), random_input({k2, 600}, dt), random_input({600}, dt)}, {},
                      "rows");
  }
  vk::set_binding_limit_override(0);
}

TEST(VulkanGemmRows, DeclinesWithReasons) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  const Attributes tb{{"transB", int64_t{1}}};
  // Nine rows of A, K = 0 (Y = beta * C), A stored (K, M): "texel" and "tiled" take them.
  expect_impl_match("Gemm", {random_input({9, 16}), random_input({7, 16})}, tb, "texel", "9 rows of A");
  expect_impl_match("Gemm", {random_input({2, 0}), random_input({5, 0}), random_input({5})}, tb, "texel", "K = 0");
  expect_impl_match("Gemm", {random_input({16, 1}), random_input({7, 16})},
                    {{"transA", int64_t{1}}, {"transB", int64_t{1}}}, "tiled", "transA");
  // Under a loop cap (800) "rows" takes a K whose loop "texel" cannot run (3000 / 4 texels
  // per invocation, and its own 32 stores), but not 4000, which "tiled" splits.
  LoopCapOverride cap(800);
  expect_impl_match("Gemm", {random_input({1, 3000}), random_input({3, 3000})}, tb, "rows");
  expect_impl_match("Gemm", {random_input({1, 4000}), random_input({3, 4000})}, tb, "tiled", "K = 4000");
}

// x [m, k] -> Gemm(x, W, b, transB = 1) -> act, folded into the Gemm by a session; and
// x [1, m, k] -> MatMul(x, W) -> Add(b) -> act, the bias and the activation folded into the
// MatMul (porta_bias).
TEST(VulkanGemmRows, SessionsApplyTheFusedBiasAndActivation) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  for (const char* op : {"Gemm", "MatMul"})
    for (const char* act : {"Relu", "Sigmoid", "HardSwish"}) {
      SCOPED_TRACE(str(op, " ", act, " (seed ", seed(), ")"));
      const bool gemm = std::string(op) == "Gemm";
      ReferenceGraph g;
      g.input("x", gemm ? random_f32({3, 130}, -2, 2) : random_f32({1, 3, 130}, -2, 2));
      g.initializer("w", gemm ? random_f32({70, 130}, -0.2, 0.2) : random_f32({130, 70}, -0.2, 0.2));
      g.initializer("b", random_f32({70}));
      if (gemm) {
        g.node("Gemm", {"x", "w", "b"}, "y", {{"transB", int64_t{1}}});
      } else {
        g.node("MatMul", {"x", "w"}, "xw");
        g.node("Add", {"xw", "b"}, "y");
      }
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
