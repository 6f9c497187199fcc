// cpu steps between convs in the channels-last layout, against the float64 reference of the
// graph as written:
//  - DenseNet's blocks: a channel Concat of convs' outputs (odd channel counts, 1x1 and larger
//    images, many inputs), then BatchNormalization with the Relu (or Clip, LeakyRelu) after it
//    fused into its pass (runtime/graph_fusion.hpp, fuse_activations; kernels/cpu/batch_norm.cpp),
//    then a Conv. An activation the BatchNormalization kernel does not declare (Sigmoid) stays
//    a step, and a BatchNormalization on a graph input fuses in the plain layout;
//  - a network's first conv: a plain image of a few channels into a channels-last output
//    (16 or 32 channels run through oneDNN's blocked layout, others channels-last; strides,
//    odd sizes, batches, a Relu fused), then a conv reading it;
//  - convnext's block: a depthwise Conv, a Transpose to channels-last, per-pixel layers, a
//    Transpose back, a per-channel scale of lower rank and the residual Add, then a Conv: the
//    Transposes read and write the convs' channels-last layout as flat copies (2-D and 3-D; 1-D
//    reads it only);
//  - MaxPool and AveragePool between convs (kernels/cpu/pool_channels_last.hpp): 1-D, 2-D and
//    3-D, pads past a 1x1 image (Inception v3's last blocks), ceil_mode windows reaching past the
//    pads, count_include_pad both ways, dilations, odd channel counts.
#include <string>
#include <vector>

#include "tests/cpu_threads.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

// Deterministic values in [lo, lo + 1).
Tensor pattern(const Shape& shape, double lo, int salt = 0) {
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = lo + static_cast<double>((i * 37 + salt * 11) % 101) / 101.0;
  return Tensor::from_values(v, shape, DType::f32);
}

// A Conv of kernel 3 (pads 1) on each of `spatial` axes from x to `cout` channels.
void conv(ReferenceGraph& g, const std::string& x, const std::string& y, int64_t cin, int64_t cout,
          size_t spatial = 2) {
  Shape ws{cout, cin};
  ws.insert(ws.end(), spatial, 3);
  g.initializer(y + "_W", pattern(ws, -0.5, static_cast<int>(cout)));
  g.initializer(y + "_B", pattern({cout}, -0.5));
  g.node("Conv", {x, y + "_W", y + "_B"}, y, {{"pads", Ints(2 * spatial, 1)}});
}

// Inference BatchNormalization with constant statistics; about half the outputs negative.
void batch_norm(ReferenceGraph& g, const std::string& x, const std::string& y, int64_t c) {
  g.initializer(y + "_scale", pattern({c}, 0.5));
  g.initializer(y + "_bias", pattern({c}, -0.5, 1));
  g.initializer(y + "_mean", pattern({c}, -0.2, 2));
  g.initializer(y + "_var", pattern({c}, 0.2, 3));
  g.node("BatchNormalization", {x, y + "_scale", y + "_bias", y + "_mean", y + "_var"}, y);
}

// x -> convs to each of `channels` -> Concat -> BatchNormalization -> activation -> Conv -> y.
struct Block {
  ReferenceGraph g;
  std::string act_output;
};
Block dense_block(const Shape& xs, const Ints& channels, const std::string& act) {
  Block b;
  ReferenceGraph& g = b.g;
  g.input("x", pattern(xs, -0.5));
  std::vector<std::string> parts;
  int64_t total = 0;
  for (size_t i = 0; i < channels.size(); ++i) {
    parts.push_back(str("part", i));
    conv(g, "x", parts.back(), xs[1], channels[i]);
    total += channels[i];
  }
  g.node("Concat", parts, "cat", {{"axis", int64_t{1}}});
  batch_norm(g, "cat", "bn", total);
  b.act_output = "bn";
  if (act == "Relu" || act == "Sigmoid") {
    g.node(act, {"bn"}, "act");
    b.act_output = "act";
  } else if (act == "LeakyRelu") {
    g.node(act, {"bn"}, "act", {{"alpha", 0.125}});
    b.act_output = "act";
  } else if (act == "Clip") {
    g.initializer("lo", Tensor::from_values({-0.25}, {}, DType::f32));
    g.initializer("hi", Tensor::from_values({0.5}, {}, DType::f32));
    g.node(act, {"bn", "lo", "hi"}, "act");
    b.act_output = "act";
  }
  conv(g, b.act_output, "y", total, 3);
  g.output("y");
  return b;
}

TEST(ChannelsLastSteps, BatchNormReluOnOddChannelCounts) {
  for (const Ints& channels : {Ints{1, 2}, Ints{16, 1}, Ints{32, 1}, Ints{3, 5, 7, 9, 9}}) {
    for (const Shape& xs : {Shape{1, 3, 1, 1}, Shape{1, 3, 5, 7}, Shape{2, 2, 4, 3}}) {
      int64_t total = 0;
      for (int64_t c : channels) total += c;
      SCOPED_TRACE(str(total, " channels, x ", shape_str(xs)));
      Block b = dense_block(xs, channels, "Relu");
      ReferenceRun r = run_against_reference(b.g, {"y"});
      EXPECT_EQ(nodes_of_op(r.plan, "Relu"), 0);
      const NodePlan* bn = find_plan_of_op(r.plan, "BatchNormalization");
      ASSERT_NE(bn, nullptr);
      EXPECT_NE(bn->reason.find("applies the Relu"), std::string::npos) << bn->reason;
      EXPECT_NE(bn->reason.find("input and output kept in the kernel's onednn-channels-last layout"), std::string::npos)
          << bn->reason;
      const NodePlan* cat = find_plan_of_op(r.plan, "Concat");
      ASSERT_NE(cat, nullptr);
      EXPECT_NE(cat->reason.find("input and output kept"), std::string::npos) << cat->reason;
    }
  }
}

// Image -> Conv (stride 1 or 2, + Relu) -> Conv: the first conv reads the plain graph input
// and writes the channels-last value the second reads.
TEST(ChannelsLastSteps, FirstConvFromAPlainImage) {
  for (int64_t cout : {16, 32, 48, 8})
    for (const Shape& xs : {Shape{1, 3, 17, 16}, Shape{2, 3, 9, 11}, Shape{1, 1, 8, 8}, Shape{1, 4, 6, 5}})
      for (int64_t stride : {1, 2}) {
        SCOPED_TRACE(str(cout, " channels, x ", shape_str(xs), ", stride ", stride));
        ReferenceGraph g;
        g.input("x", pattern(xs, -0.5));
        g.initializer("w0", pattern({cout, xs[1], 3, 3}, -0.5, 3));
        g.initializer("b0", pattern({cout}, -0.5));
        g.node("Conv", {"x", "w0", "b0"}, "c", {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{stride, stride}}});
        g.node("Relu", {"c"}, "r");
        conv(g, "r", "y", cout, 5);
        g.output("y");
        ReferenceRun r = run_against_reference(g, {"y"});
        EXPECT_EQ(nodes_of_op(r.plan, "Relu"), 0);
      }
}

// x -> Conv -> Conv (depthwise) -> Transpose (channels last) -> LayerNormalization -> MatMul ->
// Transpose (channels first) -> Mul by a [C, 1...] scale -> Add x' -> Conv -> y.
TEST(ChannelsLastSteps, PermutesAroundPerPixelLayers) {
  for (size_t spatial : {1, 2, 3}) {
    SCOPED_TRACE(str(spatial, " spatial axes"));
    const int64_t c = 24;
    Shape xs{1, c};
    for (size_t i = 0; i < spatial; ++i) xs.push_back(static_cast<int64_t>(5 + i));
    const int64_t r = static_cast<int64_t>(xs.size());
    Ints to_last{0}, to_first{0, r - 1};
    for (int64_t i = 2; i < r; ++i) to_last.push_back(i);
    to_last.push_back(1);
    for (int64_t i = 1; i < r - 1; ++i) to_first.push_back(i);
    ReferenceGraph g;
    g.input("x", pattern(xs, -0.5));
    conv(g, "x", "a", c, c, spatial);
    Shape dw{c, 1};
    dw.insert(dw.end(), spatial, 3);
    g.initializer("dw", pattern(dw, -0.5, 7));
    g.node("Conv", {"a", "dw"}, "d", {{"pads", Ints(2 * spatial, 1)}, {"group", c}});
    g.node("Transpose", {"d"}, "t", {{"perm", to_last}});
    g.initializer("ln_s", pattern({c}, 0.5));
    g.initializer("ln_b", pattern({c}, -0.5));
    g.node("LayerNormalization", {"t", "ln_s", "ln_b"}, "n", {{"axis", int64_t{-1}}});
    g.initializer("w", pattern({c, c}, -0.5, 5));
    g.node("MatMul", {"n", "w"}, "m");
    g.node("Transpose", {"m"}, "u", {{"perm", to_first}});
    Shape ss{c};
    ss.insert(ss.end(), spatial, 1);
    g.initializer("scale", pattern(ss, 0.5, 3));
    g.node("Mul", {"scale", "u"}, "v");
    g.node("Add", {"v", "a"}, "s");
    conv(g, "s", "y", c, 5, spatial);
    g.output("y");
    ReferenceRun run = run_against_reference(g, {"y"});
    int kept = 0;
    for (const NodePlan& p : run.plan)
      if (p.op == "Transpose") kept += p.reason.find("kept in the kernel's onednn-channels-last layout") != std::string::npos;
    // At rank 3 both permutations are (0, 2, 1), which the kernel takes as reading the layout.
    EXPECT_EQ(kept, spatial == 1 ? 1 : 2);
    const NodePlan* mul = find_plan_of_op(run.plan, "Mul");
    ASSERT_NE(mul, nullptr);
    if (spatial > 1) EXPECT_NE(mul->reason.find("input and output kept"), std::string::npos) << mul->reason;
  }
  // The same permutations on plain values (a graph input, a graph output): ordinary copies.
  ReferenceGraph g;
  g.input("x", pattern({2, 3, 4, 5}, -0.5));
  g.node("Transpose", {"x"}, "t", {{"perm", Ints{0, 2, 3, 1}}});
  g.node("Transpose", {"t"}, "y", {{"perm", Ints{0, 3, 1, 2}}});
  g.output("t");
  g.output("y");
  run_against_reference(g, {"t", "y"});
}

// The activations the kernel declares fuse (with their parameters); Sigmoid does not.
TEST(ChannelsLastSteps, BatchNormActivations) {
  for (const std::string act : {"Clip", "LeakyRelu", "Sigmoid"}) {
    SCOPED_TRACE(act);
    Block b = dense_block({1, 3, 5, 4}, {17, 16}, act);
    ReferenceRun r = run_against_reference(b.g, {"y"});
    EXPECT_EQ(nodes_of_op(r.plan, act), act == "Sigmoid" ? 1 : 0);
  }
}

// BatchNormalization + Relu reading a graph input and writing a graph output: plain layout.
TEST(ChannelsLastSteps, BatchNormReluPlain) {
  for (const Shape& xs : {Shape{2, 17}, Shape{1, 3, 9}, Shape{2, 33, 3, 2}, Shape{1, 5, 2, 3, 2}}) {
    SCOPED_TRACE(shape_str(xs));
    ReferenceGraph g;
    g.input("x", pattern(xs, -0.5));
    batch_norm(g, "x", "bn", xs[1]);
    g.node("Relu", {"bn"}, "y");
    g.output("y");
    ReferenceRun r = run_against_reference(g, {"y"});
    EXPECT_EQ(nodes_of_op(r.plan, "Relu"), 0);
  }
}

// DenseNet's Concat: the block input and many 3-channel layers, over images large enough that
// the copy is split across threads (and over tiles of pixels), and over 1x1 images.
TEST(ChannelsLastSteps, ConcatOfManyInputs) {
  for (const Shape& xs : {Shape{1, 2, 1, 1}, Shape{1, 2, 33, 31}}) {
    SCOPED_TRACE(shape_str(xs));
    Ints channels{19};
    for (int i = 0; i < 20; ++i) channels.push_back(i % 3 == 0 ? 1 : 3);
    Block b = dense_block(xs, channels, "Relu");
    ReferenceRun r = run_against_reference(b.g, {"y"});
    const NodePlan* cat = find_plan_of_op(r.plan, "Concat");
    ASSERT_NE(cat, nullptr);
    EXPECT_NE(cat->reason.find("input and output kept"), std::string::npos) << cat->reason;
  }
}

// Conv -> pool -> Conv: the pool reads and writes channels-last values.
TEST(ChannelsLastSteps, Pools) {
  struct Case {
    std::string label, op;
    Shape x;
    Attributes attrs;
  };
  using I = int64_t;
  const std::vector<Case> cases{
      {"inception 3x3 pads 1 over 1x1", "AveragePool", {1, 5, 1, 1},
       {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}, {"count_include_pad", I{1}}}},
      {"densenet 2x2 stride 2", "AveragePool", {1, 3, 8, 6}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}},
      {"exclude pad, asymmetric pads", "AveragePool", {1, 3, 7, 6},
       {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 0, 1}}}},
      {"include pad, ceil_mode past the pads", "AveragePool", {1, 3, 6, 7},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}},
        {"count_include_pad", I{1}}, {"ceil_mode", I{1}}}},
      {"exclude pad, ceil_mode", "AveragePool", {1, 3, 8, 7},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", I{1}}}},
      {"max 3x3 stride 2 ceil_mode", "MaxPool", {1, 3, 9, 8},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", I{1}}}},
      {"max pads and dilations", "MaxPool", {1, 3, 9, 9},
       {{"kernel_shape", Ints{3, 2}}, {"dilations", Ints{2, 3}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"max 3x3 pads 1 over 1x1", "MaxPool", {1, 3, 1, 1}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"1-D max", "MaxPool", {2, 3, 11}, {{"kernel_shape", Ints{4}}, {"strides", Ints{3}}, {"pads", Ints{1, 2}}}},
      {"1-D average", "AveragePool", {2, 3, 11}, {{"kernel_shape", Ints{4}}, {"strides", Ints{3}}, {"pads", Ints{1, 2}}}},
      {"3-D average", "AveragePool", {1, 2, 5, 6, 4},
       {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{1, 2, 2}}, {"pads", Ints{0, 1, 1, 1, 0, 0}}}},
      {"3-D max", "MaxPool", {1, 2, 5, 6, 4}, {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{1, 2, 2}}}},
  };
  // Every vector width this CPU runs (the pools' channel blocks are 4 and 1 vectors of it).
  for (int width : cpu_vector_widths()) {
    VectorWidth narrow(width);
    for (const Case& c : cases)
      for (int64_t channels : {int64_t{1}, int64_t{17}, int64_t{33}, int64_t{100}}) {  // 100: 64 + 2x16 + 4
        SCOPED_TRACE(str(c.label, ", ", channels, " channels, ", VectorWidth::name(width)));
        const size_t spatial = c.x.size() - 2;
        ReferenceGraph g;
        g.input("x", pattern(c.x, -0.5));
        conv(g, "x", "a", c.x[1], channels, spatial);
        g.node(c.op, {"a"}, "p", c.attrs);
        conv(g, "p", "y", channels, 2, spatial);
        g.output("y");
        ReferenceRun r = run_against_reference(g, {"y"});
        const NodePlan* pool = find_plan_of_op(r.plan, c.op);
        ASSERT_NE(pool, nullptr);
        EXPECT_NE(pool->reason.find("input and output kept"), std::string::npos) << pool->reason;
      }
  }
}

}  // namespace
}  // namespace porta::test
