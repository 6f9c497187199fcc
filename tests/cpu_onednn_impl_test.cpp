// Which oneDNN implementations the cpu kernels get for the layer shapes of real CNNs and
// transformers. oneDNN falls back to its reference loops ("ref:any", "ref_...") without an
// error when a layout, post-op or shape combination has no jit kernel: the result is right and
// 10-100x slower (deeplabv3's dilated convs over 2x2 maps in a blocked layout once made the model
// 534 ms instead of 4). Each case runs in a session (constant weights, so the cpu kernels choose
// their layouts and prepared calls as in a model) with oneDNN's verbose log captured, and
// fails on any reference implementation it executed. The results are checked against the
// float64 reference too.
#include <oneapi/dnnl/dnnl.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

// The implementation names of oneDNN's "exec" lines in `log` that are reference loops.
std::vector<std::string> reference_impls(const std::string& log) {
  std::vector<std::string> found;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("onednn_verbose,exec,cpu,", 0) != 0) continue;
    // onednn_verbose,exec,cpu,<primitive>,<implementation>,...
    std::vector<std::string> fields;
    std::istringstream f(line);
    for (std::string x; std::getline(f, x, ',');) fields.push_back(x);
    if (fields.size() > 5 && fields[4].rfind("ref", 0) == 0) found.push_back(fields[3] + " " + fields[4] + " " + line);
  }
  return found;
}

// Runs `g` (output "y") against its reference with oneDNN's verbose log on; returns the log.
std::string run_logged(const ReferenceGraph& g) {
  dnnl::set_verbose(2);
  testing::internal::CaptureStdout();
  run_against_reference(g, {"y"});
  std::fflush(stdout);
  std::string log = testing::internal::GetCapturedStdout();
  dnnl::set_verbose(0);
  return log;
}

struct ConvLayer {
  std::string label;
  Shape x;           // N, C, spatial...
  int64_t cout;
  Ints kernel;
  Attributes attrs;  // pads, strides, dilations, group
  std::string activation;  // "", "Relu", "Clip" (ReLU6), "HardSwish", "Sigmoid"
};

TEST(CpuOneDnnImpl, ConvLayersOfRealModels) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const Attributes p1{{"pads", Ints{1, 1, 1, 1}}};
  auto with = [](Attributes a, const char* name, const AttrValue& v) {
    a.set(name, v);
    return a;
  };
  std::vector<ConvLayer> layers{
      {"stem 7x7/2, 3 channels", {1, 3, 32, 32}, 64, {7, 7}, {{"pads", Ints{3, 3, 3, 3}}, {"strides", Ints{2, 2}}}, "Relu"},
      {"3x3", {1, 64, 16, 16}, 64, {3, 3}, p1, "Relu"},
      {"3x3/2", {1, 64, 16, 16}, 128, {3, 3}, with(p1, "strides", Ints{2, 2}), ""},
      {"1x1 expand", {1, 24, 16, 16}, 144, {1, 1}, {}, "Clip"},
      {"1x1 project, 2x2 map", {1, 960, 2, 2}, 160, {1, 1}, {}, ""},
      {"3x3 over 4x4 map", {1, 256, 4, 4}, 256, {3, 3}, p1, "Relu"},
      {"3x3 over 1x1 map", {1, 96, 1, 1}, 64, {3, 3}, p1, ""},
      {"depthwise 3x3", {1, 144, 16, 16}, 144, {3, 3}, with(p1, "group", int64_t{144}), "Clip"},
      {"depthwise 5x5/2", {1, 72, 16, 16}, 72, {5, 5},
       {{"pads", Ints{2, 2, 2, 2}}, {"strides", Ints{2, 2}}, {"group", int64_t{72}}}, "HardSwish"},
      {"depthwise 7x7 (convnext)", {1, 96, 8, 8}, 96, {7, 7}, {{"pads", Ints{3, 3, 3, 3}}, {"group", int64_t{96}}}, ""},
      {"grouped 3x3 (resnext, 32 groups)", {1, 128, 8, 8}, 128, {3, 3}, with(p1, "group", int64_t{32}), "Relu"},
      {"grouped 3x3 (regnet, 8 channels a group)", {1, 48, 8, 8}, 48, {3, 3}, with(p1, "group", int64_t{6}), "Relu"},
      {"dilated 3x3 over 2x2 (deeplabv3 ASPP)", {1, 960, 2, 2}, 256, {3, 3},
       {{"pads", Ints{12, 12, 12, 12}}, {"dilations", Ints{12, 12}}}, "Relu"},
      {"dilated 3x3 over 4x4 (no tap cut)", {1, 256, 4, 4}, 128, {3, 3},
       {{"pads", Ints{2, 2, 2, 2}}, {"dilations", Ints{2, 2}}}, "Relu"},
      {"dilated depthwise", {1, 160, 4, 4}, 160, {3, 3},
       {{"pads", Ints{2, 2, 2, 2}}, {"dilations", Ints{2, 2}}, {"group", int64_t{160}}}, ""},
      {"1x7 (inception)", {1, 128, 4, 4}, 128, {1, 7}, {{"pads", Ints{0, 3, 0, 3}}}, "Relu"},
      {"swish (efficientnet)", {1, 32, 16, 16}, 32, {3, 3}, p1, "Sigmoid"},
      {"odd channels", {1, 13, 9, 9}, 21, {3, 3}, p1, ""},
  };
  // The layers over small maps would run the small_map implementation; oneDNN still runs
  // them where that one declines (bf16 sessions, weights that are not constants).
  DisabledKernels onednn_only("cpu:Conv:small_map");
  for (const ConvLayer& l : layers) {
    SCOPED_TRACE(l.label);
    const int64_t group = l.attrs.has("group") ? l.attrs.get_int("group") : 1;
    ReferenceGraph g;
    g.input("x", random_f32(l.x));
    // A 1x1 conv first, so the layer reads what a conv wrote (channels-last between them).
    const int64_t c = l.x[1];
    g.initializer("W0", random_f32({c, c, 1, 1}));
    g.node("Conv", {"x", "W0"}, "x1");
    Shape ws{l.cout, c / group};
    ws.insert(ws.end(), l.kernel.begin(), l.kernel.end());
    g.initializer("W", random_f32(ws));
    g.initializer("B", random_f32({l.cout}));
    const std::string conv_out = l.activation.empty() ? "y" : "conv";
    g.node("Conv", {"x1", "W", "B"}, conv_out, l.attrs);
    if (l.activation == "Clip") {
      g.initializer("lo", Tensor::from_values({0.0}, {}, DType::f32));
      g.initializer("hi", Tensor::from_values({6.0}, {}, DType::f32));
      g.node("Clip", {conv_out, "lo", "hi"}, "y");
    } else if (l.activation == "Sigmoid") {
      g.node("Sigmoid", {conv_out}, "s");
      g.node("Mul", {conv_out, "s"}, "y");
    } else if (!l.activation.empty()) {
      g.node(l.activation, {conv_out}, "y");
    }
    g.output("y");
    std::string log = run_logged(g);
    EXPECT_NE(log.find("onednn_verbose,exec,cpu,convolution"), std::string::npos) << "no conv ran in oneDNN";
    for (const std::string& r : reference_impls(log)) ADD_FAILURE() << "reference implementation: " << r;
  }
}

// Convs with a fused shortcut Add (a binary post-op; tests/residual_fusion_test.cpp): the
// layouts of a ResNet/MobileNetV2 block's last conv.
TEST(CpuOneDnnImpl, ConvsWithAFusedResidual) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  // the 2x2 block would run small_map, the grouped one the grouped kernel
  DisabledKernels onednn_only("cpu:Conv:small_map,cpu:Conv:grouped");
  struct Block {
    std::string label;
    Shape x;
    Ints kernel;
    int64_t group;
  };
  for (const Block& b : std::vector<Block>{{"3x3 direct", {1, 24, 12, 12}, {3, 3}, 1},
                                           {"1x1 project", {1, 96, 8, 8}, {1, 1}, 1},
                                           {"1x1 over 2x2 (blocked)", {1, 320, 2, 2}, {1, 1}, 1},
                                           {"grouped 3x3", {1, 64, 8, 8}, {3, 3}, 8}}) {
    SCOPED_TRACE(b.label);
    const int64_t c = b.x[1];
    ReferenceGraph g;
    g.input("x", random_f32(b.x));
    g.initializer("W0", random_f32({c, c, 1, 1}));
    g.node("Conv", {"x", "W0"}, "x1");
    Shape ws{c, c / b.group};
    ws.insert(ws.end(), b.kernel.begin(), b.kernel.end());
    g.initializer("W", random_f32(ws));
    const int64_t p = b.kernel[0] / 2;
    g.node("Conv", {"x1", "W"}, "conv", {{"pads", Ints{p, p, p, p}}, {"group", b.group}});
    g.node("Add", {"conv", "x1"}, "sum");
    g.node("Relu", {"sum"}, "y");
    g.output("y");
    std::string log = run_logged(g);
    EXPECT_NE(log.find("binary_add"), std::string::npos) << "the residual was not a post-op";
    for (const std::string& r : reference_impls(log)) ADD_FAILURE() << "reference implementation: " << r;
  }
}

// A segmentation head's classifier: a channel-blocked input (128 channels), an output whose
// channels do not fill whole blocks (21), the other branch's sum fused in, and a plain graph
// output. As blocked-in/plain-out with the binary post-op it was oneDNN's reference loop (about
// 100x slower, found through the ORT execution provider on lraspp); it runs channels-last.
TEST(CpuOneDnnImpl, ClassifierConvWithAFusedSumIntoFewChannels) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  ReferenceGraph g;
  g.input("x", random_f32({1, 128, 8, 8}));
  g.initializer("W0", random_f32({128, 128, 1, 1}));
  g.node("Conv", {"x", "W0"}, "features");
  g.initializer("Wlow", random_f32({21, 128, 1, 1}));
  g.node("Conv", {"x", "Wlow"}, "low");
  g.initializer("Whigh", random_f32({21, 128, 1, 1}));
  g.initializer("Bhigh", random_f32({21}));
  g.node("Conv", {"features", "Whigh", "Bhigh"}, "high");
  g.node("Add", {"high", "low"}, "y");
  g.output("y");
  std::string log = run_logged(g);
  EXPECT_NE(log.find("binary_add"), std::string::npos) << "the sum was not a post-op";
  for (const std::string& r : reference_impls(log)) ADD_FAILURE() << "reference implementation: " << r;
}

TEST(CpuOneDnnImpl, MatMulAndPoolingLayers) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  {
    SCOPED_TRACE("batched attention MatMuls");
    ReferenceGraph g;
    g.input("q", random_f32({2, 4, 17, 32}));
    g.input("k", random_f32({2, 4, 32, 17}));
    g.node("MatMul", {"q", "k"}, "y");
    g.output("y");
    for (const std::string& r : reference_impls(run_logged(g))) ADD_FAILURE() << "reference implementation: " << r;
  }
  {
    SCOPED_TRACE("Linear layer over tokens (constant weights)");
    ReferenceGraph g;
    g.input("x", random_f32({1, 50, 96}));
    g.initializer("W", random_f32({96, 384}));
    g.node("MatMul", {"x", "W"}, "y");
    g.output("y");
    for (const std::string& r : reference_impls(run_logged(g))) ADD_FAILURE() << "reference implementation: " << r;
  }
  {
    SCOPED_TRACE("pooling after a conv");
    ReferenceGraph g;
    g.input("x", random_f32({1, 32, 16, 16}));
    g.initializer("W", random_f32({32, 32, 3, 3}));
    g.node("Conv", {"x", "W"}, "c", {{"pads", Ints{1, 1, 1, 1}}});
    g.node("MaxPool", {"c"}, "m", {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
    g.node("AveragePool", {"m"}, "y", {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}});
    g.output("y");
    for (const std::string& r : reference_impls(run_logged(g))) ADD_FAILURE() << "reference implementation: " << r;
  }
}

}  // namespace
}  // namespace porta::test
