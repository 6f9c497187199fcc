// The pre-activation rewrite (runtime/graph_fusion.hpp, fuse_pre_act_conv): an inference
// BatchNormalization (its ReLU fused by then) read by pointwise Convs alone, as DenseNet's
// layers and pre-activation ResNets are written, leaves no normalization node where the device
// runs PreActConv natively (vulkan:0): each Conv becomes one PreActConv, keeping its own fused
// activation (DenseNet's second normalization and ReLU, folded into the 1x1 Conv before). On
// every test device the session equals the float64 reference of the graph as written. Graphs
// that differ in any detail keep their normalization, with the same results: also a graph
// output, also read by an Add, a 3x3 or strided Conv reading it, channels no multiple of 4 (the
// kernel declines). And DenseNet's block: Concats that grow by one input per layer share one
// buffer (Compiler::concat_prefixes_in_place), no Concat step runs on a device with views.
#include <string>
#include <vector>

#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Form {
  std::string label;
  bool fuses = true;
  int convs = 1;             // pointwise Convs reading the normalization
  bool relu = true;          // a Relu after the normalization
  bool bottleneck = false;   // a BatchNormalization and Relu after the first Conv (folded into it)
  bool norm_output = false;  // the normalization's output is also a graph output
  bool also_added = false;   // an Add reads it too
  int kernel = 1;            // the first Conv's kernel (3: padded 3x3)
  int stride = 1;            // the first Conv's stride
};

// BatchNormalization's four parameters for `c` channels, named with `prefix`.
void norm_params(ReferenceGraph& g, const std::string& prefix, int64_t c) {
  g.initializer(prefix + "g", random_f32({c}, 0.5, 1.5));
  g.initializer(prefix + "b", random_f32({c}, -0.5, 0.5));
  g.initializer(prefix + "m", random_f32({c}, -0.5, 0.5));
  g.initializer(prefix + "v", random_f32({c}, 0.5, 1.5));
}

ReferenceGraph graph(const Form& f, int64_t C, int64_t H, int64_t M) {
  ReferenceGraph g;
  g.input("x", random_f32({1, C, H, H}, -2, 2));
  norm_params(g, "n", C);
  g.node("BatchNormalization", {"x", "ng", "nb", "nm", "nv"}, f.relu ? "bn" : "a", {{"epsilon", 1e-5}});
  if (f.relu) g.node("Relu", {"bn"}, "a");
  std::vector<std::string> terms;
  for (int i = 0; i < f.convs; ++i) {
    const std::string k = std::to_string(i);
    const int64_t kernel = i == 0 ? f.kernel : 1, stride = i == 0 ? f.stride : 1;
    g.initializer("w" + k, random_f32({M, C, kernel, kernel}, -0.3, 0.3));
    g.initializer("c" + k, random_f32({M}, -0.5, 0.5));
    Attributes a{{"kernel_shape", std::vector<int64_t>{kernel, kernel}}};
    if (kernel == 3) a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    if (stride != 1) a.set("strides", std::vector<int64_t>{stride, stride});
    const bool after = i == 0 && f.bottleneck;
    g.node("Conv", {"a", "w" + k, "c" + k}, after ? "p" + k : "y" + k, a);
    if (after) {
      norm_params(g, "q", M);
      g.node("BatchNormalization", {"p" + k, "qg", "qb", "qm", "qv"}, "r" + k, {{"epsilon", 1e-5}});
      g.node("Relu", {"r" + k}, "y" + k);
    }
    terms.push_back("y" + k);
  }
  std::string acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) {
    const std::string next = "t" + std::to_string(i);
    g.node("Add", {acc, terms[i]}, next);
    acc = next;
  }
  if (f.also_added) {
    g.node("ReduceMean", {"a"}, "am", {{"axes", std::vector<int64_t>{1}}});
    g.node("Add", {acc, "am"}, "out");
  } else {
    g.node("Identity", {acc}, "out");
  }
  g.output("out");
  if (f.norm_output) g.output("a");
  return g;
}

TEST(PreActConvFusion, NormalizationsReadByPointwiseConvsGoIntoThem) {
  const std::vector<Form> forms{
      {"BatchNorm, Relu, 1x1 Conv"},
      {"BatchNorm, 1x1 Conv", true, 1, false},
      {"two 1x1 Convs", true, 2},
      {"DenseNet's bottleneck (the Conv's own Relu)", true, 1, true, true},
      {"the normalization also an output", false, 1, true, false, true},
      {"the normalization also read by an Add", false, 1, true, false, false, true},
      {"a 3x3 Conv", false, 1, true, false, false, false, 3},
      {"a strided 1x1 Conv", false, 1, true, false, false, false, 1, 2},
  };
  const OpSchema* op = find_op("ai.porta", "PreActConv");
  ASSERT_NE(op, nullptr);
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool native = resolve(*op, device, DType::f32).path == Path::native;
    for (const Form& f : forms)
      // 4x4 and 3x3 maps (vulkan's "rows" product, X by vec4 texels and by element), 8x8 and
      // 7x7 (the texel GEMM, both ways); 6 channels (no multiple of 4: the kernel declines).
      for (const auto& [C, H] : {std::pair{int64_t{32}, int64_t{4}}, {int64_t{16}, int64_t{3}},
                                 {int64_t{24}, int64_t{8}},
                                 {int64_t{20}, int64_t{7}}, {int64_t{6}, int64_t{4}}}) {
        SCOPED_TRACE(str(f.label, ", ", C, " channels over ", H, "x", H, " on ", device.str(), ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(graph(f, C, H, 12), device, 3e-5);
        const bool fused = f.fuses && native && C % 4 == 0;
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::PreActConv"), fused ? f.convs : 0);
        EXPECT_EQ(nodes_of_op(plan, "BatchNormalization"), fused ? 0 : 1);
        for (const NodePlan& p : plan)
          if (p.op == "ai.porta::PreActConv") EXPECT_EQ(p.path, Path::native) << p.reason;
      }
  }
}

// A DenseNet block of `layers` layers over `C0` channels, growth `G`: layer L concatenates the
// block's input and every map before it, normalizes, 1x1 Conv (its normalization and ReLU
// folded), 3x3 Conv; the block's output concatenates them all (a Relu reads it). The block's input is the
// graph's, or (`from_kernel`) a Relu of it.
ReferenceGraph dense_block(int64_t C0, int64_t G, int64_t H, int layers, bool from_kernel) {
  ReferenceGraph g;
  g.input("x", random_f32({1, C0, H, H}, -2, 2));
  if (from_kernel) g.node("Relu", {"x"}, "x0");
  std::vector<std::string> pieces{from_kernel ? "x0" : "x"};
  int64_t C = C0;
  for (int l = 0; l < layers; ++l) {
    const std::string k = std::to_string(l);
    g.node("Concat", pieces, "cat" + k, {{"axis", int64_t{1}}});
    norm_params(g, "a" + k, C);
    g.node("BatchNormalization", {"cat" + k, "a" + k + "g", "a" + k + "b", "a" + k + "m", "a" + k + "v"}, "n" + k);
    g.node("Relu", {"n" + k}, "r" + k);
    g.initializer("w" + k, random_f32({2 * G, C, 1, 1}, -0.3, 0.3));
    g.node("Conv", {"r" + k, "w" + k}, "b" + k, {{"kernel_shape", std::vector<int64_t>{1, 1}}});
    norm_params(g, "c" + k, 2 * G);
    g.node("BatchNormalization", {"b" + k, "c" + k + "g", "c" + k + "b", "c" + k + "m", "c" + k + "v"}, "m" + k);
    g.node("Relu", {"m" + k}, "s" + k);
    g.initializer("v" + k, random_f32({G, 2 * G, 3, 3}, -0.2, 0.2));
    g.node("Conv", {"s" + k, "v" + k}, "f" + k,
           {{"kernel_shape", std::vector<int64_t>{3, 3}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    pieces.push_back("f" + k);
    C += G;
  }
  g.node("Concat", pieces, "block", {{"axis", int64_t{1}}});
  g.node("Relu", {"block"}, "out");  // the next block's first normalization, say
  g.output("out");
  return g;
}

TEST(PreActConvFusion, DenseBlockConcatsShareOneBuffer) {
  for (Device device : test_devices()) {
    if (!device_unusable(device).empty()) continue;
    const bool vulkan = device.type == DeviceType::vulkan;
    // 4x4 and 8x8 maps (both kernels), growth 8 and 12; the block's input a graph input (no
    // kernel writes it: the Concats copy) or a Relu's output (every Concat step goes).
    for (const bool from_kernel : {false, true})
      for (const auto& [H, G] : {std::pair{int64_t{4}, int64_t{8}}, {int64_t{8}, int64_t{12}}}) {
        SCOPED_TRACE(str(H, "x", H, " maps, growth ", G, from_kernel ? ", input from a Relu" : "", " on ", device.str(),
                         ", seed ", seed()));
        const std::vector<NodePlan> plan = plan_and_check_on(dense_block(16, G, H, 4, from_kernel), device, 3e-5);
        if (!vulkan) continue;
        EXPECT_EQ(nodes_of_op(plan, "ai.porta::PreActConv"), 4);
        EXPECT_EQ(nodes_of_op(plan, "BatchNormalization"), 0);
        int concats = 0, run = 0;
        for (const NodePlan& p : plan)
          if (p.op == "Concat") {
            ++concats;
            run += p.reason.find("not run") == std::string::npos ? 1 : 0;
          }
        EXPECT_EQ(concats, 5);
        EXPECT_EQ(run, from_kernel ? 0 : 5);
      }
  }
}

}  // namespace
}  // namespace porta::test
