// Graphs of one cpu Conv for the tests of its implementations (conv_small_map_test.cpp,
// conv_grouped_test.cpp): the conv's case, weights scaled to the fan-in, and the conv between
// graph inputs and outputs (activations plain) or between 1x1 convs (channels-last), with a
// fused residual and activation when asked.
#pragma once
#include <cmath>
#include <string>

#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {

struct ConvCase {
  std::string name;
  Shape x, w;
  Attributes attrs;
  bool bias = true;
};

// Weights scaled so sums of a few thousand products stay near 1.
inline Tensor weights(const Shape& w) {
  const double fan_in = static_cast<double>(shape_numel(w) / w[0]);
  const double r = 1.7 / std::sqrt(fan_in);
  return random_f32(w, -r, r);
}

// x -> Conv "c" (-> Add residual) (-> activation) -> out, where x is the graph input itself
// (plain) or comes from a 1x1 conv over the input (channels-last between the two convs), and
// out is the graph output (plain) or feeds a 1x1 conv (channels-last).
struct Built {
  ReferenceGraph g;
  std::string out;
  std::string conv;  // the node name of Conv "c" (ReferenceGraph names nodes "<op>_<index>")
};

// A 1x1 kernel's weights for `channels` channels at the rank of `like`'s kernel.
inline Shape pointwise(int64_t channels, const Shape& like) {
  Shape w(like.size(), 1);
  w[0] = w[1] = channels;
  return w;
}

inline Built build(const ConvCase& c, bool layout, const std::string& activation, bool residual) {
  Built b;
  ReferenceGraph& g = b.g;
  std::string x = "x";
  g.input("x", random_f32(c.x));
  if (layout) {
    g.initializer("w0", weights(pointwise(c.x[1], c.w)));
    g.node("Conv", {"x", "w0"}, "x0");
    x = "x0";
  }
  g.initializer("w", weights(c.w));
  std::vector<std::string> ins{x, "w"};
  if (c.bias) {
    g.initializer("b", random_f32({c.w[0]}));
    ins.push_back("b");
  }
  g.node("Conv", ins, "y", c.attrs);
  b.conv = layout ? "Conv_1" : "Conv_0";
  std::string y = "y";
  if (residual) {
    g.input("r", random_f32(g.reference("y").shape()));
    std::string r = "r";
    if (layout) {  // the residual from a conv too, so it is channels-last as well
      g.initializer("wr", weights(pointwise(c.w[0], c.w)));
      g.node("Conv", {"r", "wr"}, "r0");
      r = "r0";
    }
    g.node("Add", {y, r}, "s");
    y = "s";
  }
  if (activation == "SiLU") {
    g.node("Sigmoid", {y}, "sig");
    g.node("Mul", {y, "sig"}, "a");
    y = "a";
  } else if (activation == "Clip") {
    g.constant("lo", Tensor::scalar(0.0, DType::f32));
    g.constant("hi", Tensor::scalar(6.0, DType::f32));
    g.node("Clip", {y, "lo", "hi"}, "a");
    y = "a";
  } else if (!activation.empty()) {
    Attributes a;
    if (activation == "LeakyRelu") a.set("alpha", 0.1);
    if (activation == "Elu") a.set("alpha", 0.7);
    if (activation == "HardSigmoid") {
      a.set("alpha", 0.25);
      a.set("beta", 0.4);
    }
    g.node(activation, {y}, "a", a);
    y = "a";
  }
  if (layout) {
    const int64_t oc = c.w[0];
    g.initializer("w9", weights(pointwise(oc, c.w)));
    g.node("Conv", {y, "w9"}, "out");
    y = "out";
  }
  g.output(y);
  b.out = y;
  return b;
}

// Case `c` (in the layout asked) runs on the cpu Conv implementation `impl`, matches the
// float64 reference, and agrees with the onednn implementation (`impl` disabled) within 1e-5.
inline void expect_impl_matches_onednn(const ConvCase& c, bool layout, const std::string& impl) {
  SCOPED_TRACE(c.name + (layout ? ", channels-last" : ", plain") + " (seed " + std::to_string(seed()) + ")");
  Built b = build(c, layout, "", false);
  ReferenceRun r = run_against_reference(b.g, {b.out});
  EXPECT_EQ(cpu_impl_of(r.plan, b.conv), impl);
  Tensor onednn;
  {
    DisabledKernels off("cpu:Conv:" + impl);
    Session s(b.g.model());
    EXPECT_EQ(cpu_impl_of(s.plan(b.g.inputs()), b.conv), "onednn");
    onednn = s.run(b.g.inputs()).at(0);
  }
  Comparison agree = compare(r.outputs.at(0), onednn, 1e-5);
  EXPECT_TRUE(agree.ok) << "against onednn: " << agree.message;
}

// Case `c` with every fused activation, with and without a fused residual, in both layouts:
// `impl` runs it, the reference agrees, and the Add and the activation have no node of their own.
inline void expect_fused_residual_and_activations(const ConvCase& c, const std::string& impl) {
  for (const char* act : {"", "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "SiLU"})
    for (bool residual : {false, true})
      for (bool layout : {false, true}) {
        SCOPED_TRACE(str(act[0] ? act : "no activation", residual ? " after a residual" : "",
                         layout ? ", channels-last" : ", plain", " (seed ", seed(), ")"));
        Built b = build(c, layout, act, residual);
        ReferenceRun r = run_against_reference(b.g, {b.out});
        EXPECT_EQ(cpu_impl_of(r.plan, b.conv), impl);
        if (residual) EXPECT_EQ(nodes_of_op(r.plan, "Add"), 0);
        if (act[0] && std::string(act) != "SiLU") EXPECT_EQ(nodes_of_op(r.plan, act), 0) << act;
      }
}

// Case `c` does not run on `impl`, and the plan says why (contains `reason`); the result
// still matches the reference.
inline void expect_declined(const ConvCase& c, const std::string& impl, const std::string& reason) {
  SCOPED_TRACE(c.name);
  Built b = build(c, false, "", false);
  ReferenceRun r = run_against_reference(b.g, {b.out});
  EXPECT_NE(cpu_impl_of(r.plan, b.conv), impl);
  bool said = false;
  for (const NodePlan& p : r.plan)
    if (p.node == b.conv) said = p.reason.find(reason) != std::string::npos;
  EXPECT_TRUE(said) << "the plan should say why: " << reason;
}

}  // namespace porta::test
