// Compute precision (docs/ARCHITECTURE.md, "Compute precision"): which nodes a bf16/f16 session
// computes in the low format, where the planner puts casts, results against the float64
// reference within what the format allows, f32 sessions unchanged, the fallback of a device
// without low kernels, and bad option values.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cpu/fma_probe.hpp"
#include "kernels/cpu/rnn_common.hpp"
#include "runtime/precision.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/panels.hpp"
#include "tests/precision_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

// The names of the cast steps a session ran (its profile lists every step).
std::vector<std::string> cast_steps(const std::vector<NodeProfile>& profile) {
  std::vector<std::string> out;
  for (const NodeProfile& p : profile)
    if (p.op == "Cast") out.push_back(p.node);
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}


// The planner's casts, weight conversions and f32 destinations, in f16 on the cpu (whose MatMul
// computes bf16 inside its kernel, without casts: MatMulAndGemmComputeInsideInBf16 below).
TEST(Precision, PolicyLowersProductsAndKeepsSensitiveOpsInF32) {
  ReferenceGraph g = policy_graph(6, 64);
  SessionOptions o = with_precision(Precision::f16);
  o.profile = true;
  Session session(g.model(), o);
  std::vector<NodePlan> plan = session.plan(g.inputs());
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan_of_op(plan, "MatMul", 0).precision, DType::f16);
  EXPECT_EQ(plan_of_op(plan, "Softmax").precision, DType::f32);
  EXPECT_EQ(plan_of_op(plan, "MatMul", 1).precision, DType::f16);
  EXPECT_EQ(plan_of_op(plan, "LayerNormalization").precision, DType::f32);
  for (const NodePlan& p : plan) EXPECT_EQ(p.path, Path::native) << p.node << ": " << p.reason;
  const std::string& first = plan_of_op(plan, "MatMul", 0).precision_note;
  EXPECT_NE(first.find("policy: lower"), std::string::npos) << first;
  EXPECT_NE(first.find("written as f32"), std::string::npos) << first;
  EXPECT_NE(first.find("x cast to f16"), std::string::npos) << first;
  EXPECT_NE(first.find("w1 converted to f16"), std::string::npos) << first;
  EXPECT_NE(plan_of_op(plan, "LayerNormalization").precision_note.find("policy: keep f32"), std::string::npos);

  std::vector<Tensor> out = session.run(g.inputs());
  // Casts only at boundaries, into each product: both products write f32 for their f32
  // readers (Softmax and the graph output h, LayerNormalization) instead of a Cast after
  // them; weights are converted at compile time, not per run.
  std::vector<std::string> casts = cast_steps(session.profile());
  EXPECT_EQ(casts.size(), 2u);
  EXPECT_TRUE(has(casts, "cast x to f16"));
  EXPECT_TRUE(has(casts, "cast s to f16"));
  ASSERT_EQ(out.size(), 2u);
  expect_low_precision_result(out[1], g.reference("h"), DType::f16, 64, "h");
  // Softmax of values of size ~sqrt(k)/3 turns their absolute error into relative error of
  // its output, and the second product adds its own: the bound of the larger product holds.
  expect_low_precision_result(out[0], g.reference("y"), DType::f16, 64, "y");
}

// In bf16 the cpu MatMul and Gemm compute inside their kernel (KernelDef::computes_in): no
// Cast steps, A rounded per call, a constant B reordered once straight into the bf16 packed
// layout (oneDNN's, or the bf16 panels' for up to 64 rows against a B past 2^15 elements on
// AVX-512 BF16: tests/cpu_panels_test.cpp), f32 accumulation, and the bias and the output in f32. Shapes: a Linear
// layer (2-d and batched A), one row (which the gemv loop would take in f32), a product of
// two activations, a batched constant B, Gemm with transB and a bias, and an empty one.
TEST(Precision, MatMulAndGemmComputeInsideInBf16) {
  SKIP_WITHOUT_CPU_BF16();
  struct Case {
    std::string name;
    Shape a, b;
    bool b_constant;
    bool gemm = false;
    bool panels = false;  ///< a constant B past 2^15 elements: the bf16 panels where the CPU has AVX-512 BF16
  };
  const std::vector<Case> cases = {
      {"linear", {6, 64}, {64, 48}, true},
      {"linear_batched_a", {3, 7, 64}, {64, 40}, true},
      {"one_row", {1, 300}, {300, 700}, true, false, true},
      {"activations", {2, 5, 9, 32}, {2, 5, 32, 11}, false},
      {"batched_constant_b", {4, 6, 32}, {4, 32, 12}, true},
      {"gemm_transb_bias", {9, 70}, {30, 70}, true, true},
      {"gemm_one_row", {1, 300}, {500, 300}, true, true, true},
      {"many_rows", {80, 300}, {300, 700}, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(str(c.name, " (seed ", seed(), ")"));
    ReferenceGraph g;
    g.input("a", random_f32(c.a));
    if (c.b_constant) g.initializer("b", random_f32(c.b));
    else g.input("b", random_f32(c.b));
    int64_t k = c.a.back();
    if (c.gemm) {
      g.initializer("c", random_f32({c.b[0]}));
      g.node("Gemm", {"a", "b", "c"}, "y", {{"transB", int64_t{1}}});
    } else {
      g.node("MatMul", {"a", "b"}, "y");
    }
    g.output("y");
    SessionOptions o = with_precision(Precision::bf16);
    o.profile = true;
    Session s(g.model(), o);
    std::vector<NodePlan> plan = s.plan(g.inputs());
    const NodePlan& p = plan_of_op(plan, c.gemm ? "Gemm" : "MatMul");
    EXPECT_EQ(p.precision, DType::bf16) << p.precision_note;
    EXPECT_NE(p.precision_note.find("inside its kernel"), std::string::npos) << p.precision_note;
    const bool panels = c.panels && cpu::panel_bf16_available();
    EXPECT_NE(p.reason.find(panels ? "'panels'" : "'onednn'"), std::string::npos) << p.reason;
    for (int run = 0; run < 2; ++run) {  // the first call prepares, the second reuses it
      std::vector<Tensor> out = s.run(g.inputs());
      EXPECT_TRUE(cast_steps(s.profile()).empty());
      expect_low_precision_result(out.at(0), g.reference("y"), DType::bf16, k, c.name);
    }
  }
  // An empty product: zeros (plus the f32 bias), no error.
  ReferenceGraph g;
  g.input("a", random_f32({3, 0}));
  g.initializer("b", random_f32({0, 5}));
  g.node("MatMul", {"a", "b"}, "y");
  g.output("y");
  Session s(g.model(), with_precision(Precision::bf16));
  EXPECT_TRUE(compare(s.run(g.inputs()).at(0), g.reference("y"), 0).ok);
}

TEST(Precision, F32SessionIsUnchanged) {
  ReferenceGraph g = policy_graph(5, 33);
  SessionOptions o;
  o.profile = true;
  Session plain(g.model(), o);
  o.precision = Precision::f32;
  Session f32(g.model(), o);
  std::vector<Tensor> a = plain.run(g.inputs()), b = f32.run(g.inputs());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(b[i].dtype(), DType::f32);
    ASSERT_EQ(a[i].nbytes(), b[i].nbytes());
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].nbytes()), 0) << "output " << i;
  }
  EXPECT_TRUE(cast_steps(f32.profile()).empty());
  EXPECT_EQ(f32.profile().size(), plain.profile().size());
  for (const NodePlan& p : f32.plan(g.inputs())) {
    EXPECT_EQ(p.precision, DType::f32) << p.node;
    EXPECT_TRUE(p.precision_note.empty()) << p.node << ": " << p.precision_note;
  }
}

struct ProductCase {
  std::string name;
  std::function<void(ReferenceGraph&)> build;  // writes "y" from input(s) and weights
  int64_t k;
};

std::vector<ProductCase> product_cases() {
  std::vector<ProductCase> c;
  auto matmul_weight = [](Shape x, Shape w) {
    return [x, w](ReferenceGraph& g) {
      g.input("x", random_f32(x));
      g.initializer("w", random_f32(w));
      g.node("MatMul", {"x", "w"}, "y");
    };
  };
  c.push_back({"matmul_1x1", matmul_weight({1, 1}, {1, 1}), 1});
  c.push_back({"matmul_odd", matmul_weight({7, 33}, {33, 5}), 33});
  c.push_back({"matmul_empty_rows", matmul_weight({0, 16}, {16, 8}), 16});
  c.push_back({"matmul_rows_of_batches", matmul_weight({2, 3, 16}, {16, 9}), 16});
  c.push_back({"matmul_long_k", matmul_weight({3, 1000}, {1000, 17}), 1000});
  c.push_back({"matmul_broadcast_two_inputs",
               [](ReferenceGraph& g) {
                 g.input("a", random_f32({2, 3, 5, 24}));
                 g.input("b", random_f32({3, 24, 7}));
                 g.node("MatMul", {"a", "b"}, "y");
               },
               24});
  c.push_back({"gemm_bias_transB",
               [](ReferenceGraph& g) {
                 g.input("a", random_f32({5, 32}));
                 g.initializer("b", random_f32({12, 32}));
                 g.initializer("c", random_f32({12}));
                 g.node("Gemm", {"a", "b", "c"}, "y", {{"transB", int64_t{1}}});
               },
               32});
  c.push_back({"gemm_transA_alpha_beta",
               [](ReferenceGraph& g) {
                 g.input("a", random_f32({31, 5}));
                 g.input("b", random_f32({31, 7}));
                 g.initializer("c", random_f32({5, 1}));
                 g.node("Gemm", {"a", "b", "c"}, "y",
                        {{"transA", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}});
               },
               31});
  return c;
}

TEST(Precision, ProductsAgainstFloat64Reference) {
  for (DType low : {DType::bf16, DType::f16})
    for (const ProductCase& pc : product_cases()) {
      if (low == DType::bf16 && !cpu_computes_bf16()) continue;
      SCOPED_TRACE(str(pc.name, " ", dtype_name(low)));
      ReferenceGraph g;
      pc.build(g);
      g.output("y");
      Session s(g.model(), with_precision(low == DType::bf16 ? Precision::bf16 : Precision::f16));
      std::vector<NodePlan> plan = s.plan(g.inputs());
      ASSERT_EQ(plan.size(), 1u);
      EXPECT_EQ(plan[0].precision, low) << plan[0].precision_note;
      std::vector<Tensor> out = s.run(g.inputs());
      expect_low_precision_result(out.at(0), g.reference("y"), low, pc.k, pc.name);
      // The second run takes the prepared calls (constant weights bound once).
      expect_low_precision_result(s.run(g.inputs()).at(0), g.reference("y"), low, pc.k, pc.name + " (again)");
    }
}

TEST(Precision, NonContiguousInputs) {
  SKIP_WITHOUT_CPU_BF16();
  ReferenceGraph g;
  Tensor x = random_f32({33, 7}).transpose(0, 1);  // a 7x33 view with swapped strides
  ASSERT_FALSE(x.is_contiguous());
  g.input("x", x.contiguous());
  g.initializer("w", random_f32({33, 6}));
  g.node("MatMul", {"x", "w"}, "y");
  g.output("y");
  Session s(g.model(), with_precision(Precision::bf16));
  expect_low_precision_result(s.run({{"x", x}}).at(0), g.reference("y"), DType::bf16, 33, "transposed x");
}

// `auto`: the device's fast format, for products big enough to gain from it (kAutoMinMacs);
// an explicit format lowers every product.
TEST(Precision, AutoTakesTheDevicesFastFormat) {
  ReferenceGraph g = policy_graph(64, 256);  // MatMuls of 64x256x48 (786432) and 64x48x40 (122880)
  Session s(g.model(), with_precision(Precision::automatic));
  DTypeSet fast = backend_for(Device::cpu()).capabilities(0).fast_dtypes;
  DType want = dtype_in(fast, DType::bf16) ? DType::bf16 : dtype_in(fast, DType::f16) ? DType::f16 : DType::f32;
  std::vector<NodePlan> plan = s.plan(g.inputs());
  EXPECT_EQ(plan_of_op(plan, "MatMul", 0).precision, want);
  EXPECT_EQ(plan_of_op(plan, "Softmax").precision, DType::f32);
  EXPECT_EQ(plan_of_op(plan, "MatMul", 1).precision, DType::f32);
  if (want != DType::f32) {
    const std::string& note = plan_of_op(plan, "MatMul", 1).precision_note;
    EXPECT_NE(note.find("122880 multiply-adds are too few"), std::string::npos) << note;
    expect_low_precision_result(s.run(g.inputs()).at(1), g.reference("h"), want, 256, "h");
  }
  Session explicit_low(g.model(), with_precision(Precision::bf16));
  EXPECT_EQ(plan_of_op(explicit_low.plan(g.inputs()), "MatMul", 1).precision,
            cpu_computes_bf16() ? DType::bf16 : DType::f32);
}

// The cpu declares bf16 a fast format only where its bf16 dot products outrun its f32 fma
// (cpu::bf16_rate, measured once): AVX512_BF16 at half the f32 rate (an Intel Xeon VM without
// AMX) would make `auto` slower than f32. The rule, then this cpu's answer and its report.
TEST(Precision, CpuDeclaresBf16FastOnlyWhereItsProductsAreFaster) {
  EXPECT_TRUE(cpu::bf16_faster({900, 450}));    // Zen 4/5: twice the f32 rate
  EXPECT_FALSE(cpu::bf16_faster({171, 349}));   // half of it
  EXPECT_FALSE(cpu::bf16_faster({450, 450}));   // even
  EXPECT_FALSE(cpu::bf16_faster({100, 0}));     // no f32 figure
  const Capabilities caps = backend_for(Device::cpu()).capabilities(0);
  __builtin_cpu_init();
  const bool hardware = cpu::onednn_has_bf16() && __builtin_cpu_supports("avx512bf16");
  const cpu::Bf16Rate& r = cpu::bf16_rate();
  if (__builtin_cpu_supports("avx512bf16")) {
    EXPECT_GT(r.bf16, 0);
    EXPECT_GT(r.f32, 0);
  } else {
    EXPECT_EQ(r.bf16, 0);
  }
  EXPECT_EQ(dtype_in(caps.fast_dtypes, DType::bf16), hardware && cpu::bf16_faster(r));
  bool reported = false;
  for (const auto& [key, value] : caps.extra)
    if (key == "bf16 dot products") {
      reported = true;
      EXPECT_NE(value.find(cpu::bf16_faster(r) ? "auto computes products in bf16" : "auto keeps f32"), std::string::npos)
          << value;
    }
  EXPECT_EQ(reported, hardware);
}

TEST(Precision, ProductSizes) {
  auto macs = [](const char* op, std::vector<Shape> in, Attributes a = {}) {
    return detail::product_macs(*find_op(op), in, complete_attributes(*find_op(op), a, ""));
  };
  EXPECT_EQ(macs("MatMul", {{2, 3, 5, 7}, {7, 11}}), 2 * 3 * 5 * 7 * 11);
  EXPECT_EQ(macs("MatMul", {{7}, {3, 7, 11}}), 3 * 7 * 11);
  EXPECT_EQ(macs("Gemm", {{7, 5}, {3, 7}, {}}, {{"transA", int64_t{1}}, {"transB", int64_t{1}}}), 5 * 7 * 3);
  EXPECT_EQ(macs("Conv", {{2, 8, 10, 10}, {16, 8, 3, 3}}, {{"strides", std::vector<int64_t>{2, 2}}}),
            2 * 25 * 16 * 8 * 9);
  EXPECT_EQ(macs("ScaledDotProductAttention", {{1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 5, 6}}), 2 * 3 * 5 * (4 + 6));
  EXPECT_EQ(macs("Softmax", {{4, 4}}), -1);
}

// Data movement between two products stays in the low format: no cast around the Transpose.
TEST(Precision, DataMovementFollowsItsInputs) {
  ReferenceGraph g;
  g.input("x", random_f32({4, 16}));
  g.initializer("w1", random_f32({16, 8}));
  g.input("z", random_f32({4, 5}));
  g.node("MatMul", {"x", "w1"}, "h");
  g.node("Transpose", {"h"}, "ht", {{"perm", std::vector<int64_t>{1, 0}}});
  g.node("MatMul", {"ht", "z"}, "y");
  g.output("y");
  SessionOptions o = with_precision(Precision::f16);
  o.profile = true;
  Session s(g.model(), o);
  std::vector<NodePlan> plan = s.plan(g.inputs());
  EXPECT_EQ(plan_of_op(plan, "Transpose").precision, DType::f16) << plan_of_op(plan, "Transpose").precision_note;
  std::vector<Tensor> out = s.run(g.inputs());
  std::vector<std::string> casts = cast_steps(s.profile());
  EXPECT_EQ(casts.size(), 2u);  // x and z into the products; the second writes y in f32
  EXPECT_FALSE(has(casts, "cast h to f32"));
  EXPECT_FALSE(has(casts, "cast y to f32"));
  expect_low_precision_result(out.at(0), g.reference("y"), DType::f16, 16 * 4, "y");
}

// A product read both by a product and by an f32 op writes bf16 (the product reads it as is)
// and the f32 reader gets one Cast; the product whose only reader is the graph output writes
// f32.
TEST(Precision, ProductWithLowAndF32Readers) {
  ReferenceGraph g;
  g.input("x", random_f32({5, 24}));
  g.initializer("w1", random_f32({24, 12}));
  g.initializer("w2", random_f32({12, 7}));
  g.node("MatMul", {"x", "w1"}, "h");
  g.node("Softmax", {"h"}, "s", {{"axis", int64_t{-1}}});
  g.node("MatMul", {"h", "w2"}, "u");
  g.output("s");
  g.output("u");
  SessionOptions o = with_precision(Precision::f16);
  o.profile = true;
  Session s(g.model(), o);
  std::vector<NodePlan> plan = s.plan(g.inputs());
  EXPECT_EQ(plan_of_op(plan, "MatMul", 0).precision_note.find("written as f32"), std::string::npos);
  EXPECT_NE(plan_of_op(plan, "MatMul", 1).precision_note.find("written as f32"), std::string::npos);
  EXPECT_NE(plan_of_op(plan, "Softmax").precision_note.find("h cast to f32"), std::string::npos);
  std::vector<Tensor> out = s.run(g.inputs());
  std::vector<std::string> casts = cast_steps(s.profile());
  EXPECT_EQ(casts.size(), 2u);
  EXPECT_TRUE(has(casts, "cast x to f16"));
  EXPECT_TRUE(has(casts, "cast h to f32"));
  expect_low_precision_result(out.at(0), g.reference("s"), DType::f16, 24, "s");
  expect_low_precision_result(out.at(1), g.reference("u"), DType::f16, 24, "u");
}

// An f32 output from half inputs is asked for explicitly (porta_f32_output); a kernel that
// does not declare KernelDef::f32_output declines it, and a Cast (half in, f32 out by its own
// rule) is no such call.
TEST(Precision, F32OutputIsDeclaredByKernels) {
  const OpSchema* matmul = find_op("MatMul");
  Attributes marked{{"porta_f32_output", int64_t{1}}};
  KernelContext call;
  call.op = matmul;
  call.attrs = &marked;
  call.device = Device::cpu();
  call.backend = &backend_for(Device::cpu());
  call.inputs = {random_f32({3, 4}).cast(DType::bf16), random_f32({4, 2}).cast(DType::bf16)};
  call.outputs = {Tensor::empty({3, 2}, DType::f32)};
  Resolution r = resolve_call(call, DType::bf16);
  ASSERT_EQ(r.path, Path::native) << r.reason;
  EXPECT_TRUE(r.kernel->f32_output);
  Device vk{DeviceType::vulkan, 0};
  if (std::string why = device_unusable(vk); !why.empty()) GTEST_SKIP() << "vulkan:0: " << why;
  call.device = vk;
  call.backend = &backend_for(vk);
  call.inputs = {random_f32({3, 4}).cast(DType::f16).to(vk), random_f32({4, 2}).cast(DType::f16).to(vk)};
  call.outputs = {Tensor::empty({3, 2}, DType::f32, vk)};
  r = resolve_call(call, DType::f16);
  EXPECT_EQ(r.path, Path::fallback) << r.reason;
  EXPECT_NE(r.reason.find("does not write an f32 output from f16 inputs"), std::string::npos) << r.reason;
}

// A device without bf16 kernels: the same rules as any missing kernel (here the cpu fallback,
// said so by `porta ops`'s reason), and strict mode refuses it.
TEST(Precision, DeviceWithoutLowKernelsFallsBack) {
  Device vk{DeviceType::vulkan, 0};
  if (std::string why = device_unusable(vk); !why.empty()) GTEST_SKIP() << "vulkan:0: " << why;
  ReferenceGraph g = policy_graph(4, 32);
  Session s(g.model(), with_precision(Precision::bf16, vk));
  std::vector<NodePlan> plan = s.plan(g.inputs());
  const NodePlan& mm = plan_of_op(plan, "MatMul");
  EXPECT_EQ(mm.path, Path::fallback) << mm.reason;
  EXPECT_EQ(mm.precision, DType::bf16);
  EXPECT_NE(mm.reason.find("no vulkan kernel for MatMul bf16"), std::string::npos) << mm.reason;
  EXPECT_EQ(plan_of_op(plan, "Softmax").precision, DType::f32);
  std::vector<Tensor> out = s.run(g.inputs());
  expect_low_precision_result(out.at(0).to(Device::cpu()), g.reference("y"), DType::bf16, 32, "y on vulkan");

  SessionOptions strict = with_precision(Precision::bf16, vk);
  strict.strict = true;
  std::string msg = error_message<Unsupported>([&] { Session(g.model(), strict).plan(g.inputs()); });
  EXPECT_NE(msg.find("strict mode"), std::string::npos) << msg;
}

// Conv and ConvTranspose on the cpu compute in bf16 inside their kernel (KernelDef::computes_in):
// f32 activations in and out, no Cast step anywhere, weights converted once. Shapes cover what
// the kernel treats apart: a first layer of 3 channels, channels that do not fill a 16-wide
// block, depthwise and grouped, strided and dilated, 1-D and 3-D, a batch of 0, a 1x1 map,
// fused activation and residual, and transposed convs with output padding.
struct ConvCase {
  std::string name;
  Shape x, w;
  Attributes attrs;
  bool transposed = false;
  bool bias = true;
  int64_t k;  // terms per output
};

std::vector<ConvCase> conv_cases() {
  using V = std::vector<int64_t>;
  return {
      {"3x3_first_layer", {2, 3, 17, 17}, {16, 3, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, false, true, 27},
      {"3x3_blocked", {1, 32, 12, 12}, {32, 32, 3, 3}, {{"pads", V{1, 1, 1, 1}}}, false, true, 288},
      {"1x1_odd_channels", {2, 21, 7, 5}, {13, 21, 1, 1}, {}, false, false, 21},
      {"depthwise_strided", {1, 48, 15, 15}, {48, 1, 3, 3}, {{"group", int64_t{48}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, false, true, 9},
      {"grouped_dilated", {1, 32, 11, 11}, {16, 8, 3, 3}, {{"group", int64_t{4}}, {"dilations", V{2, 2}}}, false, true, 72},
      {"conv1d", {3, 16, 40}, {24, 16, 5}, {{"pads", V{2, 2}}}, false, true, 80},
      {"conv3d", {1, 8, 5, 6, 7}, {16, 8, 3, 3, 3}, {}, false, true, 216},
      {"empty_batch", {0, 16, 8, 8}, {16, 16, 3, 3}, {}, false, true, 144},
      {"one_pixel", {1, 64, 1, 1}, {32, 64, 1, 1}, {}, false, true, 64},
      {"transpose_2x", {1, 16, 6, 6}, {16, 8, 4, 4}, {{"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}}, true, true, 64},
      {"transpose_output_padding", {2, 8, 5, 5}, {8, 4, 3, 3}, {{"strides", V{2, 2}}, {"output_padding", V{1, 1}}}, true, false, 72},
  };
}

TEST(Precision, ConvComputesInsideItsKernel) {
  SKIP_WITHOUT_CPU_BF16();
  for (const ConvCase& cc : conv_cases()) {
    SCOPED_TRACE(cc.name);
    ReferenceGraph g;
    g.input("x", random_f32(cc.x));
    g.initializer("w", random_f32(cc.w));
    std::vector<std::string> ins = {"x", "w"};
    if (cc.bias) {
      g.initializer("b", random_f32({cc.transposed ? cc.w[1] * cc.attrs.get_int("group", 1) : cc.w[0]}));
      ins.push_back("b");
    }
    g.node(cc.transposed ? "ConvTranspose" : "Conv", ins, "y", cc.attrs);
    g.output("y");
    SessionOptions o = with_precision(Precision::bf16);
    o.profile = true;
    Session s(g.model(), o);
    std::vector<NodePlan> plan = s.plan(g.inputs());
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].path, Path::native) << plan[0].reason;
    EXPECT_EQ(plan[0].precision, DType::bf16);
    EXPECT_NE(plan[0].precision_note.find("bf16 inside its kernel"), std::string::npos) << plan[0].precision_note;
    for (int run = 0; run < 2; ++run) {  // the second run takes the prepared call
      std::vector<Tensor> out = s.run(g.inputs());
      expect_low_precision_result(out.at(0), g.reference("y"), DType::bf16, cc.k, str(cc.name, " run ", run));
    }
    EXPECT_TRUE(cast_steps(s.profile()).empty());
  }
}

// A CNN block as graph fusion leaves it (Conv+Relu, Conv+Add+Relu with the residual fused) and
// a pooling tail: every Conv in bf16 inside its kernel, the activations between them f32 and
// in oneDNN's layouts as before, no Cast step.
TEST(Precision, ConvBlockWithFusedResidual) {
  SKIP_WITHOUT_CPU_BF16();
  using V = std::vector<int64_t>;
  ReferenceGraph g;
  g.input("x", random_f32({2, 32, 10, 10}));
  g.initializer("w1", random_f32({32, 32, 3, 3}, -0.2, 0.2));
  g.initializer("b1", random_f32({32}));
  g.initializer("w2", random_f32({32, 32, 3, 3}, -0.2, 0.2));
  g.initializer("b2", random_f32({32}));
  g.node("Conv", {"x", "w1", "b1"}, "c1", {{"pads", V{1, 1, 1, 1}}});
  g.node("Relu", {"c1"}, "r1");
  g.node("Conv", {"r1", "w2", "b2"}, "c2", {{"pads", V{1, 1, 1, 1}}});
  g.node("Add", {"c2", "x"}, "s");
  g.node("Relu", {"s"}, "r2");
  g.node("GlobalAveragePool", {"r2"}, "y");
  g.output("y");
  SessionOptions o = with_precision(Precision::bf16);
  o.profile = true;
  Session s(g.model(), o);
  std::vector<NodePlan> plan = s.plan(g.inputs());
  EXPECT_EQ(plan_of_op(plan, "Conv", 0).precision, DType::bf16);
  EXPECT_EQ(plan_of_op(plan, "Conv", 1).precision, DType::bf16);
  EXPECT_EQ(plan_of_op(plan, "GlobalAveragePool").precision, DType::f32);
  std::vector<Tensor> out = s.run(g.inputs());
  EXPECT_TRUE(cast_steps(s.profile()).empty());
  expect_low_precision_result(out.at(0), g.reference("y"), DType::bf16, 2 * 288, "y");
}

// Fused attention in bf16 (the attribute a bf16 session sets): both products in bf16, the
// softmax in f32; inputs and output f32. Several key blocks (600 keys), a broadcast additive
// mask, causal with a query block boundary, a single query and key, different head sizes.
TEST(Precision, AttentionComputesInsideItsKernel) {
  SKIP_WITHOUT_CPU_BF16();
  const OpSchema* op = find_op("ScaledDotProductAttention");
  ASSERT_NE(op, nullptr);
  struct Case {
    int64_t b, h, sq, skv, d, dv;
    bool causal, mask;
  };
  for (const Case& c : {Case{2, 3, 37, 600, 16, 24, false, true}, Case{1, 2, 130, 130, 64, 64, true, false},
                        Case{1, 1, 1, 1, 8, 8, false, false}}) {
    SCOPED_TRACE(str("B", c.b, " H", c.h, " Sq", c.sq, " Skv", c.skv, " D", c.d, c.causal ? " causal" : "",
                     c.mask ? " mask" : ""));
    std::vector<Tensor> in = {random_f32({c.b, c.h, c.sq, c.d}), random_f32({c.b, c.h, c.skv, c.d}),
                              random_f32({c.b, c.h, c.skv, c.dv})};
    if (c.mask) in.push_back(random_f32({c.sq, c.skv}, -2, 0));
    Attributes plain = complete_attributes(*op, Attributes{{"causal", int64_t{c.causal ? 1 : 0}}}, "");
    Attributes marked = plain;
    marked.set("porta_compute", int64_t{16});
    KernelContext call;
    call.op = op;
    call.attrs = &marked;
    call.device = Device::cpu();
    call.backend = &backend_for(Device::cpu());
    call.inputs = in;
    call.outputs = {Tensor::from_values(std::vector<double>(static_cast<size_t>(c.b * c.h * c.sq * c.dv), 1e30),
                                        {c.b, c.h, c.sq, c.dv}, DType::f32)};  // poisoned
    Resolution r = resolve_call(call, DType::f32);
    ASSERT_EQ(r.path, Path::native) << r.reason;
    ASSERT_TRUE(dtype_in(r.kernel->computes_in, DType::bf16));
    r.kernel->fn(call);
    std::vector<Tensor> in64;
    for (const Tensor& t : in) in64.push_back(t.cast(DType::f64));
    Tensor ref = reference_op(op->qualified_name(), in64, plain, 1).at(0);
    expect_low_precision_result(call.outputs[0], ref, DType::bf16, c.d + c.skv, "attention");
  }
}

// LSTM and GRU (policy: lower inside): on the cpu their products run in bf16 inside the kernel
// (f32 in and out, no Casts), the gates and the cell and hidden state in f32; within bf16's
// bound of the float64 reference (k = input + hidden terms per product, over seq steps whose
// errors add). A format no kernel takes that way (f16 on the cpu; vulkan:0, whose f16 sequence
// kernel would keep the state in f16) leaves them in f32, saying why.
TEST(Precision, RnnProductsInsideTheirKernels) {
  SKIP_WITHOUT_CPU_BF16();
  const int64_t seq = 7, batch = 2, input = 24, hidden = 40;
  for (const std::string op : {"LSTM", "GRU"}) {
    SCOPED_TRACE(op);
    const int64_t gates = op == "LSTM" ? 4 : 3;
    ReferenceGraph g;
    g.input("x", random_f32({seq, batch, input}));
    g.initializer("w", random_f32({1, gates * hidden, input}, -0.3, 0.3));
    g.initializer("r", random_f32({1, gates * hidden, hidden}, -0.3, 0.3));
    g.initializer("b", random_f32({1, 2 * gates * hidden}, -0.3, 0.3));
    Attributes attrs{{"hidden_size", hidden}};
    if (op == "GRU") attrs.set("linear_before_reset", int64_t{1});
    g.node(op, {"x", "w", "r", "b"}, std::vector<std::string>{"y", "yh"}, attrs);
    g.output("y");
    g.output("yh");
    SessionOptions o = with_precision(Precision::bf16);
    o.profile = true;
    Session s(g.model(), o);
    std::vector<NodePlan> plan = s.plan(g.inputs());
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].precision, DType::bf16) << plan[0].precision_note;
    EXPECT_NE(plan[0].precision_note.find("policy: lower inside"), std::string::npos) << plan[0].precision_note;
    std::vector<Tensor> out = s.run(g.inputs());
    EXPECT_TRUE(cast_steps(s.profile()).empty());
    const double u = unit_roundoff(DType::bf16), bound = 3 * u * std::sqrt(static_cast<double>(seq * (input + hidden)));
    for (size_t i = 0; i < 2; ++i) {
      ASSERT_EQ(out[i].dtype(), DType::f32);
      Comparison c = compare(out[i], g.reference(i == 0 ? "y" : "yh"), bound);
      EXPECT_TRUE(c.ok) << "output " << i << ": " << c.message << " (bound " << bound << ")";
      if (cpu::rnn_bf16_supported()) EXPECT_GT(c.rel, u / 16) << "output " << i << ": as accurate as f32";
    }
    {
      Session f16(g.model(), with_precision(Precision::f16));
      const NodePlan p = f16.plan(g.inputs()).at(0);
      EXPECT_EQ(p.precision, DType::f32);
      EXPECT_NE(p.precision_note.find("while keeping its state in f32"), std::string::npos) << p.precision_note;
    }
    Device vk{DeviceType::vulkan, 0};
    if (!device_unusable(vk).empty()) continue;
    for (Precision pr : {Precision::f16, Precision::bf16}) {
      Session v(g.model(), with_precision(pr, vk));
      const NodePlan p = v.plan(g.inputs()).at(0);
      EXPECT_EQ(p.precision, DType::f32) << p.precision_note;
    }
  }
}

// A Conv kernel that does not declare a format declines a call asking for it.
TEST(Precision, ComputeInsideIsDeclaredByKernels) {
  Attributes marked = complete_attributes(*find_op("Conv"), Attributes{}, "");
  marked.set("porta_compute", int64_t{16});
  KernelContext call;
  call.op = find_op("Conv");
  call.attrs = &marked;
  call.device = Device::cpu();
  call.backend = &backend_for(Device::cpu());
  call.inputs = {random_f32({1, 4, 5, 5}), random_f32({8, 4, 3, 3})};
  call.outputs = {Tensor::empty({1, 8, 3, 3}, DType::f32)};
  Resolution r = resolve_call(call, DType::f32);
  ASSERT_EQ(r.path, Path::native) << r.reason;
  EXPECT_TRUE(dtype_in(r.kernel->computes_in, DType::bf16));
  Device vk{DeviceType::vulkan, 0};
  if (std::string why = device_unusable(vk); !why.empty()) GTEST_SKIP() << "vulkan:0: " << why;
  call.device = vk;
  call.backend = &backend_for(vk);
  call.inputs = {random_f32({1, 4, 5, 5}).to(vk), random_f32({8, 4, 3, 3}).to(vk)};
  call.outputs = {Tensor::empty({1, 8, 3, 3}, DType::f32, vk)};
  r = resolve_call(call, DType::f32);
  EXPECT_NE(r.path, Path::native) << r.reason;
  EXPECT_NE(r.reason.find("does not compute in bf16 inside the kernel"), std::string::npos) << r.reason;
}

// A CPU where oneDNN has no bf16: a bf16 session plans every product in f32 with the reason,
// runs the implementations an f32 session runs (gemv, panels, small_map: they decline calls
// that compute in bf16), and answers exactly as the f32 session.
TEST(Precision, CpuWithoutBf16ComputesInF32) {
  if (cpu_computes_bf16())
    GTEST_SKIP() << "oneDNN has bf16 on this CPU (ctest precision_without_bf16 runs this with ONEDNN_MAX_CPU_ISA=AVX2)";
  EXPECT_FALSE(cpu::onednn_has_bf16());
  EXPECT_FALSE(dtype_in(backend_for(Device::cpu()).capabilities(0).fast_dtypes, DType::bf16));
  ReferenceGraph g = policy_graph(3, 64);
  Session low(g.model(), with_precision(Precision::bf16));
  Session f32(g.model(), with_precision(Precision::f32));
  std::vector<NodePlan> plan = low.plan(g.inputs());
  std::vector<NodePlan> f32_plan = f32.plan(g.inputs());
  ASSERT_EQ(plan.size(), f32_plan.size());
  for (size_t i = 0; i < plan.size(); ++i) {
    EXPECT_EQ(plan[i].precision, DType::f32) << plan[i].node << ": " << plan[i].precision_note;
    EXPECT_EQ(plan[i].reason, f32_plan[i].reason) << plan[i].node;
  }
  const NodePlan& product = plan_of_op(plan, "MatMul", 0);
  EXPECT_NE(product.precision_note.find("f32: cpu computes bf16 products in f32: it has no bf16 arithmetic"),
            std::string::npos)
      << product.precision_note;
  std::vector<Tensor> a = low.run(g.inputs()), b = f32.run(g.inputs());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(compare(a[i], b[i], 0).ok) << "output " << i;
  Session automatic(g.model(), with_precision(Precision::automatic));
  for (const NodePlan& p : automatic.plan(g.inputs())) EXPECT_EQ(p.precision, DType::f32) << p.node;
}

// f16 on Vulkan where the device computes in f16 (shaderFloat16 and 16-bit storage): the
// products and convolutions run there in f16 with f32 accumulation, the rest in f32, every node
// on the device.
TEST(Precision, VulkanF16) {
  Device vk{DeviceType::vulkan, 0};
  if (std::string why = device_unusable(vk); !why.empty()) GTEST_SKIP() << "vulkan:0: " << why;
  if (!dtype_in(backend_for(vk).capabilities(0).dtypes, DType::f16)) GTEST_SKIP() << "vulkan:0 has no f16";
  {
    ReferenceGraph g = policy_graph(6, 64);
    Session s(g.model(), with_precision(Precision::f16, vk));
    std::vector<NodePlan> plan = s.plan(g.inputs());
    for (const NodePlan& p : plan) EXPECT_EQ(p.path, Path::native) << p.node << ": " << p.reason;
    EXPECT_EQ(plan_of_op(plan, "MatMul", 0).precision, DType::f16);
    EXPECT_EQ(plan_of_op(plan, "Softmax").precision, DType::f32);
    std::vector<Tensor> out = s.run(g.inputs());
    expect_low_precision_result(out.at(1).to(Device::cpu()), g.reference("h"), DType::f16, 64, "h on vulkan");
    expect_low_precision_result(out.at(0).to(Device::cpu()), g.reference("y"), DType::f16, 64, "y on vulkan");
  }
  for (const ConvCase& cc : conv_cases()) {
    if (cc.transposed || cc.x[0] == 0) continue;
    SCOPED_TRACE(cc.name);
    ReferenceGraph g;
    g.input("x", random_f32(cc.x));
    g.initializer("w", random_f32(cc.w));
    g.node("Conv", {"x", "w"}, "y", cc.attrs);
    g.output("y");
    Session s(g.model(), with_precision(Precision::f16, vk));
    std::vector<NodePlan> plan = s.plan(g.inputs());
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].path, Path::native) << plan[0].reason;
    EXPECT_EQ(plan[0].precision, DType::f16) << plan[0].precision_note;
    expect_low_precision_result(s.run(g.inputs()).at(0).to(Device::cpu()), g.reference("y"), DType::f16, cc.k, cc.name);
  }
}

// bf16 and f16 on the CUDA/HIP kernels (and the emulator that runs their sources): products
// and convolutions read low operands and accumulate in f32 there (gemm_tiled.cu's float
// accumulators, the direct and cuDNN convs), every node on the device; the policy keeps
// Softmax and the norm in f32 with Casts at the boundaries.
TEST(Precision, GpuBf16AndF16) {
  int devices = 0;
  for (DeviceType kind : gpu_device_types())
    for (int index : {0, 1}) {
      Device d{kind, index};
      if (!device_unusable(d).empty()) continue;
      ++devices;
      for (Precision p : {Precision::bf16, Precision::f16}) {
        const DType low = p == Precision::bf16 ? DType::bf16 : DType::f16;
        SCOPED_TRACE(str(d.str(), " ", dtype_name(low), " (seed ", seed(), ")"));
        {
          ReferenceGraph g = policy_graph(6, 64);
          Session s(g.model(), with_precision(p, d));
          std::vector<NodePlan> plan = s.plan(g.inputs());
          for (const NodePlan& n : plan) EXPECT_EQ(n.path, Path::native) << n.node << ": " << n.reason;
          EXPECT_EQ(plan_of_op(plan, "MatMul", 0).precision, low);
          EXPECT_EQ(plan_of_op(plan, "MatMul", 1).precision, low);
          EXPECT_EQ(plan_of_op(plan, "Softmax").precision, DType::f32);
          EXPECT_EQ(plan_of_op(plan, "LayerNormalization").precision, DType::f32);
          std::vector<Tensor> out = s.run(g.inputs());
          expect_low_precision_result(out.at(1).to(Device::cpu()), g.reference("h"), low, 64, "h");
          expect_low_precision_result(out.at(0).to(Device::cpu()), g.reference("y"), low, 64, "y");
        }
        for (const ConvCase& cc : conv_cases()) {
          if (cc.x[0] == 0) continue;
          SCOPED_TRACE(cc.name);
          ReferenceGraph g;
          g.input("x", random_f32(cc.x));
          g.initializer("w", random_f32(cc.w));
          g.node(cc.transposed ? "ConvTranspose" : "Conv", {"x", "w"}, "y", cc.attrs);
          g.output("y");
          Session s(g.model(), with_precision(p, d));
          std::vector<NodePlan> plan = s.plan(g.inputs());
          const NodePlan& conv = plan_of_op(plan, cc.transposed ? "ConvTranspose" : "Conv");
          EXPECT_EQ(conv.path, Path::native) << conv.reason;
          EXPECT_EQ(conv.precision, low) << conv.precision_note;
          expect_low_precision_result(s.run(g.inputs()).at(0).to(Device::cpu()), g.reference("y"), low, cc.k,
                                      cc.name);
        }
      }
    }
  if (devices == 0) GTEST_SKIP() << "no CUDA, HIP or emulated GPU device here";
}

}  // namespace
}  // namespace porta::test
