// A channel Concat read by one BatchNormalization alone, on vulkan:0 (lavapipe): where the
// BatchNormalization runs "texel" (spatial size a multiple of 4) it reads the Concat's inputs
// as its parts (batchnorm_parts_texel.comp, up to 8 parts per dispatch) and the Concat step
// goes; otherwise both run as written. Against the float64 reference of the graph, with each
// activation the kernel fuses: one part, more parts than one dispatch takes (17 and 9), odd
// channel counts, a batch, ranks 3 to 5, a part of no channels; then the shapes "texel"
// declines and the Concats the rewrite leaves alone.
#include <gtest/gtest.h>

#include "porta/session.hpp"
#include "tests/concat_batch_norm_graph.hpp"
#include "tests/vulkan_texel_test_util.hpp"

namespace porta::test {
namespace {

using namespace concat_bn;

// Runs the graph in a vulkan:0 session against the reference; returns the plan.
std::vector<NodePlan> run_on_vulkan(const ReferenceGraph& g, const std::string& y) {
  SessionOptions o;
  o.device = Device::parse("vulkan:0");
  Session s(g.model(), o);
  Comparison c = compare(s.run(g.inputs()).at(0), g.reference(y), 1e-5);
  EXPECT_TRUE(c.ok) << c.message;
  return s.plan(g.inputs());
}

TEST(VulkanConcatBatchNorm, PartsNormalizedStraightIntoY) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU: \"texel\" is for CPU-like devices";
  Ints dense{64};
  for (int i = 0; i < 16; ++i) dense.push_back(32);
  const std::vector<Case> cases = {
      {"one part", {1, 4, 5}, {7}},
      {"DenseNet's 17 parts over 4x4 (3 dispatches)", {1, 4, 4}, dense},
      {"9 odd parts, batch 3", {3, 2, 6}, {1, 3, 5, 7, 9, 2, 4, 6, 8}},
      {"rank 3", {2, 12}, {5, 3}},
      {"rank 5", {1, 2, 2, 3}, {4, 1, 6}},
      {"a part of no channels", {2, 4, 2}, {2, 0, 5}},
  };
  for (const Case& c : cases)
    for (const std::string act : {"", "Relu", "LeakyRelu", "Clip"}) {
      SCOPED_TRACE(str(c.name, act.empty() ? "" : ", ", act, " (seed ", seed(), ")"));
      ReferenceGraph g;
      const std::string y = build(g, c, false, act);
      const std::vector<NodePlan> plan = run_on_vulkan(g, y);
      expect_fused(plan, c.channels.size());
      const NodePlan& bn = plan_of_op(plan, "BatchNormalization");
      EXPECT_NE(bn.reason.find("'texel'"), std::string::npos) << bn.reason;
    }
}

TEST(VulkanConcatBatchNorm, LeftAloneWhereItCannotTakeThem) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  {
    SCOPED_TRACE("spatial size 15: the BatchNormalization runs \"elements\"");
    ReferenceGraph g;
    const std::string y = build(g, {"", {1, 3, 5}, {5, 3}}, false, "Relu");
    expect_not_fused(run_on_vulkan(g, y));
  }
  {
    SCOPED_TRACE("the joined tensor is also a graph output");
    ReferenceGraph g;
    const std::string y = build(g, {"", {2, 2, 4}, {3, 5}}, false, "Relu");
    g.output("cat");
    SessionOptions o;
    o.device = Device::parse("vulkan:0");
    Session s(g.model(), o);
    std::vector<Tensor> out = s.run(g.inputs());
    for (size_t i = 0; i < 2; ++i) {
      Comparison c = compare(out.at(i), g.reference(i == 0 ? y : "cat"), 1e-5);
      EXPECT_TRUE(c.ok) << c.message;
    }
    expect_not_fused(s.plan(g.inputs()));
  }
}

}  // namespace
}  // namespace porta::test
