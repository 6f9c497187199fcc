// Residual fusion (runtime/graph_fusion.hpp, fuse_residual_add; run per plan on shapes): an Add
// of a Conv's output and another value of the same shape becomes the Conv's porta_residual
// input, and an activation after the Add fuses after it. Every case runs in sessions against
// the float64 reference of the graph as written (and with PORTA_FUSE=0), with fresh random
// values, and checks whether the fusion happened: the cpu Conv adds the residual as a oneDNN
// binary post-op (direct convs, channels-last or channel-blocked) or after the primitive
// (Winograd), in either case before the activation. Cases that must not fuse: a broadcasting
// Add, a Conv output read twice or a graph output, an Add of a value with itself. Eager calls
// of a Conv with a residual on every test device give the reference too (a kernel that does
// not declare porta_residual declines the call instead of dropping the residual).
#include <map>
#include <string>
#include <vector>

#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Ints = std::vector<int64_t>;

std::string reason_of(const std::vector<NodePlan>& plan, const std::string& node) {
  for (const NodePlan& p : plan)
    if (p.node == node) return p.reason;
  return "(no node " + node + ")";
}

bool fused(const std::vector<NodePlan>& plan, const std::string& conv) {
  return reason_of(plan, conv).find("adds the other input of the Add") != std::string::npos;
}

// Adds Conv `name` (k x k, pads k/2, `group`) from `x` (c channels) to `cout` channels; the node
// is named `name`.
void conv(ReferenceGraph& g, const std::string& x, const std::string& name, int64_t c, int64_t cout, int64_t k = 3,
          int64_t group = 1, int64_t stride = 1) {
  g.initializer(name + "_W", random_f32({cout, c / group, k, k}));
  g.initializer(name + "_B", random_f32({cout}));
  const int64_t p = k / 2;
  Attributes a{{"pads", Ints{p, p, p, p}}, {"strides", Ints{stride, stride}}};
  if (group != 1) a.set("group", group);
  g.node("Conv", {x, name + "_W", name + "_B"}, name, a);
}

// ReferenceGraph names nodes "<op>_<n>", n counting nodes in the order they were added: the
// second Conv added is "Conv_1".
const std::string kSecondConv = "Conv_1";

struct Block {
  std::string label;
  Shape x;
  int64_t cout;
  int64_t k = 3;
  int64_t group = 1;
  std::string activation;  // after the Add: "", "Relu", "Clip", "Sigmoid", "LeakyRelu"
  bool residual_first = false;  // Add(r, y) instead of Add(y, r)
};

// x -> Conv "a" -> Conv "y" (main path); r = Conv "r"(x) computed after it; Add(y, r) -> act.
void expect_block(const Block& b, bool expect_fused = true) {
  SCOPED_TRACE(b.label + ", seed " + std::to_string(seed()));
  ReferenceGraph g;
  g.input("x", random_f32(b.x));
  const int64_t c = b.x[1];
  conv(g, "x", "a", c, b.cout, 1);
  conv(g, "a", "y", b.cout, b.cout, b.k, b.group);
  conv(g, "x", "r", c, b.cout, 1);  // the shortcut, after the main path in node order
  const std::string sum = b.activation.empty() ? "out" : "sum";
  g.node("Add", b.residual_first ? std::vector<std::string>{"r", "y"} : std::vector<std::string>{"y", "r"}, sum);
  if (b.activation == "Clip") {
    g.initializer("lo", Tensor::from_values({-0.5}, {}, DType::f32));
    g.initializer("hi", Tensor::from_values({0.75}, {}, DType::f32));
    g.node("Clip", {sum, "lo", "hi"}, "out");
  } else if (b.activation == "LeakyRelu") {
    g.node("LeakyRelu", {sum}, "out", {{"alpha", 0.3}});
  } else if (!b.activation.empty()) {
    g.node(b.activation, {sum}, "out");
  }
  g.output("out");
  ReferenceRun run = run_against_reference(g, {"out"});
  const std::string& main_conv = kSecondConv;
  EXPECT_EQ(fused(run.plan, main_conv), expect_fused) << reason_of(run.plan, main_conv);
  if (expect_fused && !b.activation.empty())
    EXPECT_NE(reason_of(run.plan, main_conv).find("applies the " + b.activation), std::string::npos)
        << reason_of(run.plan, main_conv);
}

TEST(ResidualFusion, ShortcutAddsFuseIntoTheirConv) {
  // Direct convs (binary post-op), channels-last.
  expect_block({"direct 3x3, Relu", {1, 24, 9, 10}, 24, 3, 1, "Relu"});
  expect_block({"operands swapped, no activation", {2, 8, 7, 7}, 8, 3, 1, "", true});
  expect_block({"Clip", {1, 24, 9, 10}, 24, 3, 1, "Clip"});
  expect_block({"LeakyRelu", {1, 24, 9, 10}, 24, 3, 1, "LeakyRelu"});
  expect_block({"Sigmoid (applied after the primitive)", {1, 24, 9, 10}, 24, 3, 1, "Sigmoid"});
  // Winograd candidates (3x3, channels multiples of 16, 2^24 multiply-adds: Winograd on up to
  // two threads, kernels/cpu/conv_choice.cpp's use_winograd): the sum follows the primitive.
  expect_block({"winograd, Relu", {1, 64, 24, 24}, 64, 3, 1, "Relu"});
  expect_block({"winograd, Clip", {1, 64, 24, 24}, 64, 3, 1, "Clip"});
  expect_block({"winograd, Sigmoid", {1, 64, 24, 24}, 64, 3, 1, "Sigmoid"});
  expect_block({"winograd, no activation", {1, 64, 24, 24}, 64, 3, 1, ""});
  // Channel-blocked small outputs (<= 16 pixels), grouped and depthwise convs.
  expect_block({"small output, blocked", {1, 32, 4, 4}, 64, 3, 1, "Relu"});
  expect_block({"grouped", {1, 32, 6, 6}, 32, 3, 4, "Relu"});
  expect_block({"depthwise", {1, 16, 6, 6}, 16, 3, 16, "Clip"});
  expect_block({"1x1", {1, 40, 5, 5}, 40, 1, 1, "Relu"});
}

// Dilated convs with a residual over channels-last inputs, on the onednn implementation: oneDNN
// 2.6 runs them gemm-based without AVX-512 (im2col), whose binary post-op added the residual at
// the wrong elements with channels-last tensors (51% off in 2-D, 97% in 1-D); the sum now
// follows such a primitive. The residual is a plain graph input and a conv's output (channels-
// last), the activation Relu or none.
TEST(ResidualFusion, DilatedConvsOverChannelsLastInputs) {
  DisabledKernels onednn_only("cpu:Conv:small_map");
  struct Case {
    std::string label;
    Shape x;
    Ints kernel, pads, dilations;
  };
  const std::vector<Case> cases{
      {"3x3 dilation 4 over 8x8", {1, 24, 8, 8}, {3, 3}, {4, 4, 4, 4}, {4, 4}},
      {"3x3 dilation 2 over 7x9", {1, 16, 7, 9}, {3, 3}, {2, 2, 2, 2}, {2, 2}},
      {"1-D kernel 3, dilation 8 over 40", {1, 32, 40}, {3}, {8, 8}, {8}},
  };
  for (const Case& c : cases)
    for (bool residual_from_conv : {false, true})
      for (bool relu : {false, true}) {
        SCOPED_TRACE(str(c.label, residual_from_conv ? ", residual from a conv" : ", residual a graph input",
                         relu ? ", Relu" : "", ", seed ", seed()));
        const int64_t ch = c.x[1];
        Shape pointwise(c.x.size(), 1), w{ch, ch};
        pointwise[0] = pointwise[1] = ch;
        w.insert(w.end(), c.kernel.begin(), c.kernel.end());
        ReferenceGraph g;
        g.input("x", random_f32(c.x));
        g.initializer("w0", random_f32(pointwise));
        g.node("Conv", {"x", "w0"}, "a");  // channels-last from here
        g.initializer("w", random_f32(w, -0.2, 0.2));
        g.initializer("b", random_f32({ch}));
        g.node("Conv", {"a", "w", "b"}, "y", {{"pads", c.pads}, {"dilations", c.dilations}});
        if (residual_from_conv) {
          g.initializer("wr", random_f32(pointwise));
          g.node("Conv", {"x", "wr"}, "r");
        } else {
          g.input("r", random_f32(c.x));
        }
        g.node("Add", {"y", "r"}, relu ? "sum" : "out");
        if (relu) g.node("Relu", {"sum"}, "out");
        g.output("out");
        ReferenceRun run = run_against_reference(g, {"out"});
        EXPECT_TRUE(fused(run.plan, kSecondConv)) << reason_of(run.plan, kSecondConv);
      }
}

// ResNet's downsampling block: Add(main, shortcut) where both are Conv outputs; one fuses.
TEST(ResidualFusion, AddOfTwoConvs) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  ReferenceGraph g;
  g.input("x", random_f32({1, 16, 10, 10}));
  conv(g, "x", "a", 16, 32, 3, 1, 2);
  conv(g, "a", "y", 32, 32, 3);
  conv(g, "x", "r", 16, 32, 1, 1, 2);
  g.node("Add", {"y", "r"}, "sum");
  g.node("Relu", {"sum"}, "out");
  g.output("out");
  ReferenceRun run = run_against_reference(g, {"out"});
  int fused_convs = 0;
  for (const NodePlan& p : run.plan) fused_convs += p.op == "Conv" && fused(run.plan, p.node);
  EXPECT_EQ(fused_convs, 1);
  EXPECT_EQ(nodes_of_op(run.plan, "Add"), 0);
  EXPECT_EQ(nodes_of_op(run.plan, "Relu"), 0);
}

// The residual is a graph input (plain) while the Conv's input is channels-last; and a Conv
// over zero input channels (the bias plus the residual).
TEST(ResidualFusion, PlainResidualAndNoInputChannels) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  {
    ReferenceGraph g;
    g.input("x", random_f32({1, 16, 8, 8}));
    g.input("r", random_f32({1, 32, 8, 8}));
    conv(g, "x", "a", 16, 16, 1);
    conv(g, "a", "y", 16, 32, 3);
    g.node("Add", {"y", "r"}, "sum");
    g.node("Relu", {"sum"}, "out");
    g.output("out");
    ReferenceRun run = run_against_reference(g, {"out"});
    EXPECT_TRUE(fused(run.plan, kSecondConv)) << reason_of(run.plan, kSecondConv);
  }
  {
    ReferenceGraph g;
    g.input("x", random_f32({1, 0, 5, 5}));
    g.input("r", random_f32({1, 6, 5, 5}));
    conv(g, "x", "y", 0, 6, 3);
    g.node("Add", {"r", "y"}, "sum");
    g.node("Relu", {"sum"}, "out");
    g.output("out");
    run_against_reference(g, {"out"});
  }
}

TEST(ResidualFusion, AddsThatStay) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  {
    SCOPED_TRACE("broadcasting residual");
    ReferenceGraph g;
    g.input("x", random_f32({1, 8, 6, 6}));
    g.input("r", random_f32({1, 8, 1, 1}));
    conv(g, "x", "y", 8, 8, 3);
    g.node("Add", {"y", "r"}, "out");
    g.output("out");
    ReferenceRun run = run_against_reference(g, {"out"});
    EXPECT_EQ(nodes_of_op(run.plan, "Add"), 1);
  }
  {
    SCOPED_TRACE("conv output read twice, and a graph output");
    ReferenceGraph g;
    g.input("x", random_f32({1, 8, 6, 6}));
    g.input("r", random_f32({1, 8, 6, 6}));
    conv(g, "x", "y", 8, 8, 3);
    g.node("Add", {"y", "r"}, "out");
    g.node("Neg", {"y"}, "neg");
    conv(g, "x", "z", 8, 8, 3);
    g.node("Add", {"z", "r"}, "out2");
    g.output("out");
    g.output("neg");
    g.output("out2");
    g.output("z");
    ReferenceRun run = run_against_reference(g, {"out", "neg", "out2", "z"});
    EXPECT_EQ(nodes_of_op(run.plan, "Add"), 2);
  }
  {
    SCOPED_TRACE("y + y");
    ReferenceGraph g;
    g.input("x", random_f32({1, 8, 6, 6}));
    conv(g, "x", "y", 8, 8, 3);
    g.node("Add", {"y", "y"}, "out");
    g.output("out");
    ReferenceRun run = run_against_reference(g, {"out"});
    EXPECT_EQ(nodes_of_op(run.plan, "Add"), 1);
  }
}

// A transformer block's residual Adds: after a MatMul (with its fused bias), and after a Gemm
// through the Reshape that gives its rows back their [batch, tokens] axes. Each kernel that
// may run the product (cpu: gemv, panels, onednn; vulkan: rows, texel, tiled) runs it in turn
// (the others disabled), on every test device, against the float64 reference.
struct ProductCase {
  std::string label;
  std::string op = "MatMul";
  Shape a;  // MatMul: [.., rows, K]; Gemm: [rows, K]
  int64_t n = 0;
  std::string activation;  // after the Add
  bool trans_b = false;
};

ReferenceGraph product_block(const ProductCase& c) {
  const int64_t k = c.a.back(), rows = shape_numel(c.a) / std::max<int64_t>(k, 1);
  ReferenceGraph g;
  g.input("x", random_f32(c.a));
  Shape y = c.a;
  y.back() = c.n;
  if (c.op == "MatMul") {
    g.initializer("w", random_f32({k, c.n}, -0.3, 0.3));
    g.initializer("bias", random_f32({c.n}));
    g.node("MatMul", {"x", "w"}, "p");
    g.node("Add", {"p", "bias"}, "y");
  } else {
    g.initializer("w", random_f32(c.trans_b ? Shape{c.n, k} : Shape{k, c.n}, -0.3, 0.3));
    g.initializer("c", random_f32({c.n}));
    g.node("Gemm", {"x", "w", "c"}, "y2", {{"transB", int64_t{c.trans_b ? 1 : 0}}, {"alpha", 0.5}});
    y = {rows / 3, 3, c.n};  // rows back as [batch, tokens]
    g.initializer("y_shape", Tensor::from_values({static_cast<double>(y[0]), 3.0, static_cast<double>(c.n)}, {3},
                                                 DType::i64));
    g.node("Reshape", {"y2", "y_shape"}, "y");
  }
  g.input("r", random_f32(y));
  const std::string sum = c.activation.empty() ? "out" : "sum";
  g.node("Add", {"r", "y"}, sum);
  if (!c.activation.empty()) g.node(c.activation, {sum}, "out");
  g.output("out");
  return g;
}

TEST(ResidualFusion, ProductsTakeTheResidual) {
  const std::vector<ProductCase> cases{
      {"MatMul, 2 x 5 tokens", "MatMul", {2, 5, 12}, 7},
      {"MatMul, Relu after the Add", "MatMul", {2, 5, 12}, 7, "Relu"},
      {"MatMul, 1 row, 2^17 weights", "MatMul", {1, 1, 512}, 260},
      {"MatMul, 3 rows", "MatMul", {3, 256}, 520, "Sigmoid"},
      {"MatMul, 37 rows", "MatMul", {37, 20}, 66},
      {"Gemm through a Reshape", "Gemm", {9, 16}, 11},
      {"Gemm transB through a Reshape, Relu", "Gemm", {6, 300}, 450, "Relu", true},
  };
  // Each implementation alone (the rest disabled), then all of them.
  const std::vector<std::string> only{"", "gemv", "panels", "onednn", "rows", "texel", "tiled"};
  const std::vector<std::string> impls{"gemv", "panels", "onednn", "rows", "texel", "tiled"};
  std::map<std::string, int> ran;  // fused runs per implementation kept alone
  for (const ProductCase& c : cases)
    for (const std::string& keep : only) {
      // The other implementations of the kept one's backend go (a vulkan session keeps the
      // cpu's, which it would fall back to).
      auto on_cpu = [](const std::string& impl) { return impl == "gemv" || impl == "panels" || impl == "onednn"; };
      std::string off;
      for (const std::string& impl : impls)
        if (!keep.empty() && impl != keep && on_cpu(impl) == on_cpu(keep))
          off += str(off.empty() ? "" : ",", on_cpu(impl) ? "cpu:" : "vulkan:", c.op, ":", impl);
      DisabledKernels disabled(off);
      for (Device device : test_devices()) {
        SCOPED_TRACE(str(c.label, keep.empty() ? "" : ", " + keep + " alone", " on ", device.str(), ", seed ",
                         seed()));
        if (!device_unusable(device).empty()) continue;
        // The kinds whose kernels declare porta_residual: the cpu and vulkan. On the others (the
        // GPU kinds, their emulator) the Add stays, and the numbers are checked.
        const bool declares = device.type == DeviceType::cpu || device_type_name(device.type) == "vulkan";
        if (!keep.empty() && (!declares || (device.type == DeviceType::cpu) != on_cpu(keep))) continue;
        ReferenceGraph g = product_block(c);
        std::vector<NodePlan> plan;
        try {
          plan = plan_and_check_on(g, device, 1e-5, 2);
        } catch (const Unsupported& e) {
          // The one implementation left declines this shape (gemv past 4 rows, rows past 8).
          EXPECT_FALSE(keep.empty()) << e.what();
          continue;
        }
        const std::string product = c.op == "MatMul" ? "MatMul_0" : "Gemm_0";
        const std::string reason = reason_of(plan, product);
        // Where the kept vulkan implementation declines, the fused node runs on the cpu with
        // its residual (checked above like the rest).
        if (!declares || reason.find("runs on cpu with copies") != std::string::npos) continue;
        EXPECT_TRUE(fused(plan, product)) << reason;
        EXPECT_EQ(nodes_of_op(plan, "Add"), 0);
        if (!keep.empty() && reason.find("'" + keep + "' for") != std::string::npos) ++ran[keep];
      }
    }
  // Every implementation of the devices here took some of the cases.
  for (Device device : test_devices())
    for (const std::string& impl : impls) {
      if (!device_unusable(device).empty()) continue;
      const bool cpu_impl = impl == "gemv" || impl == "panels" || impl == "onednn";
      if ((device.type == DeviceType::cpu) != cpu_impl || (!cpu_impl && device_type_name(device.type) != "vulkan")) continue;
      EXPECT_GT(ran[impl], 0) << impl << " on " << device.str();
    }
}

TEST(ResidualFusion, ProductAddsThatStay) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  {
    SCOPED_TRACE("a residual broadcast over the rows");
    ReferenceGraph g;
    g.input("x", random_f32({4, 9}));
    g.initializer("w", random_f32({9, 5}));
    g.input("r", random_f32({5}));
    g.node("MatMul", {"x", "w"}, "y");
    g.node("Add", {"y", "r"}, "out");
    g.output("out");
    ReferenceRun run = run_against_reference(g, {"out"});
    EXPECT_EQ(nodes_of_op(run.plan, "Add"), 1);
  }
  {
    SCOPED_TRACE("the product read twice");
    ReferenceGraph g;
    g.input("x", random_f32({4, 9}));
    g.initializer("w", random_f32({9, 5}));
    g.input("r", random_f32({4, 5}));
    g.node("MatMul", {"x", "w"}, "y");
    g.node("Add", {"y", "r"}, "out");
    g.node("Neg", {"y"}, "neg");
    g.output("out");
    g.output("neg");
    ReferenceRun run = run_against_reference(g, {"out", "neg"});
    EXPECT_EQ(nodes_of_op(run.plan, "Add"), 1);
  }
}

// Conv with porta_residual called eagerly on every device: the result includes the residual
// (a device kernel that does not declare it declines; the call then runs elsewhere).
TEST(ResidualFusion, EagerCallsOnEveryDevice) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  std::vector<Tensor> host{random_f32({1, 4, 5, 5}), random_f32({6, 4, 3, 3}), random_f32({6}),
                           random_f32({1, 6, 5, 5})};
  Attributes a{{"pads", Ints{1, 1, 1, 1}}, {"porta_activation", std::string("Relu")}};
  std::vector<Tensor> ref = reference_op("Conv", host, a, 1);
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    std::vector<Tensor> in;
    for (const Tensor& t : host) in.push_back(t.to(d));
    std::vector<Tensor> got = call_op("Conv", in, a, 1);
    Comparison c = compare(got.at(0), ref.at(0), 1e-5);
    EXPECT_TRUE(c.ok) << c.message;
    // The fused activation alone is no more optional than the residual.
    in.pop_back();
    std::vector<Tensor> ref3 = reference_op("Conv", {host[0], host[1], host[2]}, a, 1);
    Comparison c3 = compare(call_op("Conv", in, a, 1).at(0), ref3.at(0), 1e-5);
    EXPECT_TRUE(c3.ok) << "activation only: " << c3.message;
  }
}

// MatMul (with a bias) and Gemm with porta_residual called eagerly on every device.
TEST(ResidualFusion, EagerProductCallsOnEveryDevice) {
  SCOPED_TRACE("seed " + std::to_string(seed()));
  const std::vector<Tensor> mm{random_f32({2, 3, 10}), random_f32({10, 6}), random_f32({6}), random_f32({2, 3, 6})};
  const std::vector<Tensor> gemm{random_f32({5, 10}), random_f32({6, 10}), random_f32({1, 6}), random_f32({5, 6})};
  const Attributes relu{{"porta_activation", std::string("Relu")}};
  const Attributes gemm_attrs{{"transB", int64_t{1}}, {"beta", 0.5}, {"porta_activation", std::string("Tanh")}};
  const std::vector<Tensor> mm_ref = reference_op("MatMul", mm, relu, 1);
  const std::vector<Tensor> gemm_ref = reference_op("Gemm", gemm, gemm_attrs, 1);
  for (Device d : test_devices()) {
    if (!device_unusable(d).empty()) continue;
    SCOPED_TRACE(d.str());
    std::vector<Tensor> in_mm, in_gemm;
    for (const Tensor& t : mm) in_mm.push_back(t.to(d));
    for (const Tensor& t : gemm) in_gemm.push_back(t.to(d));
    Comparison c = compare(call_op("MatMul", in_mm, relu, 1).at(0), mm_ref.at(0), 1e-5);
    EXPECT_TRUE(c.ok) << "MatMul: " << c.message;
    Comparison c2 = compare(call_op("Gemm", in_gemm, gemm_attrs, 1).at(0), gemm_ref.at(0), 1e-5);
    EXPECT_TRUE(c2.ok) << "Gemm: " << c2.message;
  }
}

}  // namespace
}  // namespace porta::test
