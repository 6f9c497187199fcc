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

#include "tests/cpu_threads.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

struct Case {
  std::string name;
  Shape pixels;  // batch, then the spatial axes
  Ints channels;
};

// The parts (plain: graph inputs; else each a 1x1 Conv of a 3-channel input), their channel
// Concat, BatchNormalization with constant statistics, the activation, and (channels-last)
// a 1x1 Conv reading the result. Returns the graph output's name.
std::string build(ReferenceGraph& g, const Case& c, bool channels_last, const std::string& act,
                  bool constant_stats = true) {
  auto shape_of = [&](int64_t ch) {
    Shape s{c.pixels[0], ch};
    s.insert(s.end(), c.pixels.begin() + 1, c.pixels.end());
    return s;
  };
  Shape one(c.pixels.size() - 1, 1);
  if (channels_last) {
    g.input("x", random_f32(shape_of(3)));
  }
  std::vector<std::string> parts;
  int64_t total = 0;
  for (size_t i = 0; i < c.channels.size(); ++i) {
    const std::string p = str("part", i);
    const int64_t ch = c.channels[i];
    if (channels_last) {
      Shape ws{ch, 3};
      ws.insert(ws.end(), one.begin(), one.end());
      g.initializer(p + "_w", random_f32(ws));
      g.node("Conv", {"x", p + "_w"}, p);
    } else {
      g.input(p, random_f32(shape_of(ch), -2, 2));
    }
    parts.push_back(p);
    total += ch;
  }
  g.node("Concat", parts, "cat", {{"axis", int64_t{1}}});
  const std::vector<std::string> stats{"scale", "bias", "mean", "var"};
  for (size_t k = 0; k < stats.size(); ++k) {
    Tensor v = k == 3 ? random_f32({total}, 0.1, 2) : random_f32({total});
    if (constant_stats || k != 0) g.initializer(stats[k], v);
    else g.input(stats[k], v);
  }
  g.node("BatchNormalization", {"cat", "scale", "bias", "mean", "var"}, "bn", {{"epsilon", 1e-3}});
  std::string y = "bn";
  if (act == "Relu") {
    g.node("Relu", {y}, "act");
    y = "act";
  } else if (act == "LeakyRelu") {
    g.node("LeakyRelu", {y}, "act", {{"alpha", 0.125}});
    y = "act";
  } else if (act == "Clip") {
    g.initializer("lo", Tensor::from_values({-0.25}, {}, DType::f32));
    g.initializer("hi", Tensor::from_values({0.5}, {}, DType::f32));
    g.node("Clip", {y, "lo", "hi"}, "act");
    y = "act";
  }
  if (channels_last) {
    Shape ws{5, total};
    ws.insert(ws.end(), one.begin(), one.end());
    g.initializer("out_w", random_f32(ws));
    g.node("Conv", {y, "out_w"}, "y");
    y = "y";
  }
  g.output(y);
  return y;
}

void expect_fused(const std::vector<NodePlan>& plan, size_t parts) {
  const NodePlan& cat = plan_of_op(plan, "Concat");
  EXPECT_NE(cat.reason.find("not run: its BatchNormalization reads its inputs"), std::string::npos) << cat.reason;
  const NodePlan& bn = plan_of_op(plan, "BatchNormalization");
  EXPECT_NE(bn.reason.find(str("reads the ", parts, " inputs of the Concat before it")), std::string::npos)
      << bn.reason;
}

void expect_not_fused(const std::vector<NodePlan>& plan) {
  const NodePlan& cat = plan_of_op(plan, "Concat");
  EXPECT_EQ(cat.reason.find("not run"), std::string::npos) << cat.reason;
  const NodePlan& bn = plan_of_op(plan, "BatchNormalization");
  EXPECT_EQ(bn.reason.find("inputs of the Concat"), std::string::npos) << bn.reason;
}

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
