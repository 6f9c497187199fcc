// The graphs of the Concat-inside-BatchNormalization tests (tests/concat_batch_norm_test.cpp on
// the cpu, tests/vulkan_concat_batch_norm_test.cpp on vulkan:0): a channel Concat of parts, a
// BatchNormalization, an activation, and how a plan shows the fusion.
#pragma once
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test::concat_bn {

using Ints = std::vector<int64_t>;

struct Case {
  std::string name;
  Shape pixels;  // batch, then the spatial axes
  Ints channels;
};

// The parts (plain: graph inputs; else each a 1x1 Conv of a 3-channel input), their channel
// Concat, BatchNormalization with constant statistics, the activation, and (channels-last)
// a 1x1 Conv reading the result. Returns the graph output's name.
inline std::string build(ReferenceGraph& g, const Case& c, bool channels_last, const std::string& act,
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

inline void expect_fused(const std::vector<NodePlan>& plan, size_t parts) {
  const NodePlan& cat = plan_of_op(plan, "Concat");
  EXPECT_NE(cat.reason.find("not run: its BatchNormalization reads its inputs"), std::string::npos) << cat.reason;
  const NodePlan& bn = plan_of_op(plan, "BatchNormalization");
  EXPECT_NE(bn.reason.find(str("reads the ", parts, " inputs of the Concat before it")), std::string::npos)
      << bn.reason;
}

inline void expect_not_fused(const std::vector<NodePlan>& plan) {
  const NodePlan& cat = plan_of_op(plan, "Concat");
  EXPECT_EQ(cat.reason.find("not run"), std::string::npos) << cat.reason;
  const NodePlan& bn = plan_of_op(plan, "BatchNormalization");
  EXPECT_EQ(bn.reason.find("inputs of the Concat"), std::string::npos) << bn.reason;
}

}  // namespace porta::test::concat_bn
