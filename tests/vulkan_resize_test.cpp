// Resize's two Vulkan implementations (kernels/vulkan/resize.cpp): "planes" (at most the last
// two axes resized: 4 outputs of a row per invocation, the row and column taps unrolled, the
// column table padded to whole quads) and "taps" (any plan), against the float64 reference with
// NaN-poisoned outputs. Every case of the op's own suite (ops/resize.cpp: nearest, linear and
// cubic, every coordinate mode, sizes and scales, downsampling, size-1 axes, empty tensors) runs
// through both, in f32 and f16; "planes" declines what it cannot run (a resized leading axis,
// trilinear 5-D, tf_crop_and_resize) and says why. Then widths around the 4-output quads,
// invocation counts on both sides of the div21 bound, a grid spread over two axes, and a
// session whose batch changes between runs (the step's tables are uploaded once and reused).
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "ops/common.hpp"
#include "porta/session.hpp"
#include "tests/reference_graph.hpp"
#include "tests/vulkan_texel_test_util.hpp"

namespace porta::test {
namespace {

Tensor sizes(std::vector<double> v) {
  InputSpec s = opdef::in_values({static_cast<int64_t>(v.size())}, DType::i64, v);
  return make_input(s, DType::i64);
}

Attributes linear() { return {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string("half_pixel")}}; }

void run_suite(DType dt) {
  const OpSchema* op = find_op("Resize");
  ASSERT_NE(op, nullptr);
  // The suite's cases "planes" declines: a resized axis before the last two (after merging the
  // untouched ones: nearest_batch_axis resizes axis 0 of [3, 2, 4], the last two merged into
  // one, so "planes" runs it), or an output that may take the extrapolation value.
  const std::set<std::string> taps_only = {"nearest_5d", "linear_5d_trilinear",
                                           "tf_crop_and_resize_extrapolation", "tf_crop_and_resize_cubic"};
  int planes = 0, taps = 0;
  for (const OpCase& c : op->cases()) {
    if (!dtype_in(c.dtypes, dt)) continue;
    SCOPED_TRACE(testing::Message() << c.name << " " << dtype_name(dt) << " (seed " << seed() << ")");
    std::vector<Tensor> host;
    for (const InputSpec& s : c.inputs) host.push_back(s.absent ? Tensor() : make_input(s, dt));
    const bool declined = taps_only.count(c.name) > 0;
    expect_impl_match("Resize", host, c.attrs, declined ? "taps" : "planes",
                      declined ? (c.name.rfind("tf_", 0) == 0 ? "tf_crop_and_resize" : "before the last two") : "");
    (declined ? taps : planes) += 1;
    DisabledKernels taps_alone("vulkan:Resize:planes");
    expect_impl_match("Resize", host, c.attrs, "taps");
  }
  EXPECT_GE(planes, dt == DType::f32 ? 20 : 8);
  EXPECT_GE(taps, dt == DType::f32 ? 4 : 1);
}

TEST(VulkanResize, EveryCaseOfTheSuiteThroughBothImplementationsF32) {
  REQUIRE_VULKAN();
  run_suite(DType::f32);
}

TEST(VulkanResize, EveryCaseOfTheSuiteThroughBothImplementationsF16) {
  REQUIRE_VULKAN();
  if (!vk::context(0).caps().fp16_storage) GTEST_SKIP() << "no 16-bit storage";
  run_suite(DType::f16);
}

// Output widths 1 to 9 (a quad partly past the row's end, whole quads, one past), rows of one
// column, cubic's 4 x 4 taps, a resize of the last axis alone (rows untouched), downsampling.
TEST(VulkanResize, WidthsAroundTheQuads) {
  REQUIRE_VULKAN();
  for (int64_t w = 1; w <= 9; ++w) {
    SCOPED_TRACE(testing::Message() << "width " << w);
    expect_impl_match("Resize", {random_input({2, 3, 3, 2}), Tensor(), Tensor(), sizes({2, 3, 5, double(w)})},
                      linear(), "planes");
  }
  Attributes cubic = {{"mode", std::string("cubic")}, {"coordinate_transformation_mode", std::string("pytorch_half_pixel")}};
  expect_impl_match("Resize", {random_input({1, 4, 5, 6}), Tensor(), Tensor(), sizes({1, 4, 11, 13})}, cubic, "planes");
  expect_impl_match("Resize", {random_input({3, 4, 5, 6}), Tensor(), Tensor(), sizes({3, 4, 5, 15})}, linear(), "planes");
  expect_impl_match("Resize", {random_input({3, 4, 5, 6}), Tensor(), Tensor(), sizes({3, 4, 9, 6})}, linear(), "planes");
  expect_impl_match("Resize", {random_input({1, 2, 33, 31}), Tensor(), Tensor(), sizes({1, 2, 7, 5})}, linear(), "planes");
}

// The index math takes div21 below 2^21 invocations (planes x rows x quads) and an integer
// division from there: 511 and 512 planes of 64 rows of 64 quads; a grid spread over two axes
// under a forced workgroup limit.
TEST(VulkanResize, InvocationsAroundTheDiv21BoundAndGridsOverTwoAxes) {
  REQUIRE_VULKAN();
  for (double planes : {511.0, 512.0}) {
    SCOPED_TRACE(testing::Message() << planes << " planes");
    expect_impl_match("Resize",
                      {random_input({1, static_cast<int64_t>(planes), 8, 64}), Tensor(), Tensor(),
                       sizes({1, planes, 64, 256})},
                      linear(), "planes");
  }
  vk::set_group_limit_override(0, 2);
  expect_impl_match("Resize", {random_input({2, 21, 8, 8}), Tensor(), Tensor(), sizes({2, 21, 64, 64})}, linear(),
                    "planes");
  vk::set_group_limit_override(0, 0);
}

// A segmentation head's upsampling in a session whose batch changes between runs: the step's
// tables (which do not depend on the batch) are uploaded on the first run and reused; every run
// matches the reference of its own input.
TEST(VulkanResize, SessionReusesItsTablesAcrossRunsAndBatches) {
  REQUIRE_VULKAN();
  ReferenceGraph g;
  g.input("x", random_f32({1, 21, 8, 8}), "batch");
  g.initializer("scales", Tensor::from_host(std::vector<float>{1, 1, 8, 8}.data(), {4}, DType::f32));
  g.node("Resize", {"x", "", "scales"}, "y", linear());
  g.output("y");
  SessionOptions o;
  o.device = Device::parse("vulkan:0");
  Session s(g.model(), o);
  const std::vector<NodePlan> plan = s.plan(g.inputs());
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_NE(plan[0].reason.find("'planes'"), std::string::npos) << plan[0].reason;
  Tensor scales = Tensor::from_host(std::vector<float>{1, 1, 8, 8}.data(), {4}, DType::f32);
  for (int64_t batch : {1, 3, 1, 2}) {
    SCOPED_TRACE(testing::Message() << "batch " << batch << " (seed " << seed() << ")");
    Tensor x = random_f32({batch, 21, 8, 8});
    std::vector<Tensor> ref = reference_op("Resize", {x, Tensor(), scales}, linear(), 1);
    Comparison c = compare(s.run({{"x", x}}).at(0), ref.at(0), 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
  }
}

}  // namespace
}  // namespace porta::test
