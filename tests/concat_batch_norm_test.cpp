// A channel Concat read by one BatchNormalization alone runs inside that BatchNormalization on
// the cpu (runtime/session_plan.hpp, concat_into_batch_norm; kernels/cpu/batch_norm.cpp): the
// BatchNormalization reads the Concat's inputs and the Concat step goes. Against the float64
// reference of the graph as written (and a session without fusion), on fresh random data:
//  - plain operands (graph inputs joined, the result a graph output) and channels-last ones
//    (each part from a Conv, the result read by a Conv);
//  - 1 to 17 parts, odd channel counts, a part of no channels, ranks 3 to 5, batches, images
//    past the kernel's tiles of pixels, on one thread and on two;
//  - no activation, and the Relu, LeakyRelu (a negative slope) and Clip the kernel fuses;
//  - NaN and infinities in the parts, which reach exactly the outputs that read them;
// and the Concats it leaves alone, which run as before: an output also read elsewhere or
// returned, another axis, statistics that are not constants.
#include <limits>
#include <string>
#include <vector>

#include "tests/concat_batch_norm_graph.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using namespace concat_bn;

const std::vector<Case>& cases() {
  Ints dense{64};
  for (int i = 0; i < 16; ++i) dense.push_back(32);
  static const std::vector<Case> all = {
      {"one part", {1, 4, 5}, {7}},
      {"two odd parts", {1, 3, 5}, {5, 3}},
      {"DenseNet's 17 parts over 4x4", {1, 4, 4}, dense},
      {"rank 3, batch 3", {3, 11}, {1, 2, 9}},
      {"rank 5", {2, 3, 2, 3}, {4, 1, 6}},
      {"past the tiles of pixels: 33x31, 40 channels", {1, 33, 31}, {8, 32}},
      {"one pixel, channels past 8 Ki", {1, 1, 1}, {4096, 4100, 3}},
  };
  return all;
}

TEST(ConcatBatchNorm, FusedInBothLayoutsWithEachActivation) {
  for (bool channels_last : {false, true})
    for (const Case& c : cases())
      for (const std::string act : {"", "Relu", "LeakyRelu", "Clip"}) {
        SCOPED_TRACE(str(c.name, channels_last ? ", channels-last" : ", plain", act.empty() ? "" : ", ", act,
                         " (seed ", seed(), ")"));
        ReferenceGraph g;
        const std::string y = build(g, c, channels_last, act);
        ReferenceRun r = run_against_reference(g, {y});
        expect_fused(r.plan, c.channels.size());
        if (channels_last) {
          const NodePlan& bn = plan_of_op(r.plan, "BatchNormalization");
          EXPECT_NE(bn.reason.find("input and output kept in the kernel's onednn-channels-last layout"),
                    std::string::npos)
              << bn.reason;
        }
      }
}

TEST(ConcatBatchNorm, TwoThreads) {
  TwoThreads threads;
  for (bool channels_last : {false, true})
    for (const Case& c : cases()) {
      SCOPED_TRACE(str(c.name, channels_last ? ", channels-last" : ", plain", " (seed ", seed(), ")"));
      ReferenceGraph g;
      const std::string y = build(g, c, channels_last, "Relu");
      expect_fused(run_against_reference(g, {y}).plan, c.channels.size());
    }
}

// A part of no channels (plain: the channels-last layout takes no empty tensors).
TEST(ConcatBatchNorm, PartOfNoChannels) {
  for (const Ints& channels : {Ints{0, 3}, Ints{2, 0, 5}, Ints{4, 0}}) {
    SCOPED_TRACE(str(channels.size(), " parts (seed ", seed(), ")"));
    ReferenceGraph g;
    const std::string y = build(g, {"", {2, 3, 4}, channels}, false, "Relu");
    expect_fused(run_against_reference(g, {y}).plan, channels.size());
  }
}

// NaN, +inf and -inf in the parts: each reaches its own output only (the reference computes
// them alike: inf * a + b, then the Relu).
TEST(ConcatBatchNorm, NonFiniteValuesStayInTheirOutputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  ReferenceGraph g;
  g.input("a", Tensor::from_values({1.0, nan, -2.0, 0.5}, {1, 2, 2}, DType::f32));
  g.input("b", Tensor::from_values({inf, -inf, 3.0, -1.0, 0.0, 2.0}, {1, 3, 2}, DType::f32));
  g.node("Concat", {"a", "b"}, "cat", {{"axis", int64_t{1}}});
  g.initializer("scale", Tensor::from_values({1.0, -2.0, 0.5, 1.5, 3.0}, {5}, DType::f32));
  g.initializer("bias", Tensor::from_values({0.0, 1.0, -1.0, 0.25, 2.0}, {5}, DType::f32));
  g.initializer("mean", Tensor::from_values({0.5, 0.0, 1.0, -1.0, 0.0}, {5}, DType::f32));
  g.initializer("var", Tensor::from_values({1.0, 4.0, 0.25, 2.0, 1.0}, {5}, DType::f32));
  g.node("BatchNormalization", {"cat", "scale", "bias", "mean", "var"}, "y");
  g.output("y");
  Session s(g.model());
  const Tensor out = s.run(g.inputs()).at(0);
  expect_fused(s.plan(g.inputs()), 2);
  // NaN where the reference has NaN, the same infinities, the rest within 1e-5.
  Comparison c = compare(out, g.reference("y"), 1e-5);
  EXPECT_TRUE(c.ok) << c.message;
}

// Concats the BatchNormalization does not take: they run, and the results still match.
TEST(ConcatBatchNorm, LeftAloneWhereItCannotTakeThem) {
  const Case c{"", {2, 3, 4}, {3, 5}};
  {
    SCOPED_TRACE("the joined tensor is also a graph output");
    ReferenceGraph g;
    const std::string y = build(g, c, false, "Relu");
    g.output("cat");
    expect_not_fused(run_against_reference(g, {y, "cat"}).plan);
  }
  {
    SCOPED_TRACE("the joined tensor is read by another node too");
    ReferenceGraph g;
    const std::string y = build(g, c, false, "Relu");
    g.node("Sigmoid", {"cat"}, "other");
    g.output("other");
    expect_not_fused(run_against_reference(g, {y, "other"}).plan);
  }
  {
    SCOPED_TRACE("the scale is a graph input");
    ReferenceGraph g;
    const std::string y = build(g, c, false, "Relu", false);
    expect_not_fused(run_against_reference(g, {y}).plan);
  }
  {
    SCOPED_TRACE("a Concat along another axis");
    ReferenceGraph g;
    g.input("a", random_f32({1, 4, 3}));
    g.input("b", random_f32({1, 4, 2}));
    g.node("Concat", {"a", "b"}, "cat", {{"axis", int64_t{2}}});
    g.initializer("scale", random_f32({4}));
    g.initializer("bias", random_f32({4}));
    g.initializer("mean", random_f32({4}));
    g.initializer("var", random_f32({4}, 0.1, 2));
    g.node("BatchNormalization", {"cat", "scale", "bias", "mean", "var"}, "y");
    g.output("y");
    expect_not_fused(run_against_reference(g, {"y"}).plan);
  }
}

}  // namespace
}  // namespace porta::test
