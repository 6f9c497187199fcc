// Kernels for CPU-like Vulkan devices (implementation "texel", which reads operands through
// uniform texel buffers) against the implementations GPUs keep, on the same calls.
//
// MatMul and Gemm have two implementations (kernels/vulkan/matmul.cpp): "texel", the
// barrier-free register-tiled GEMM that reads its operands through uniform texel buffers, for
// CPU-like devices (lavapipe), and "tiled", the shared-memory tiled GEMM for GPUs, which also
// takes what "texel" declines. Every case runs through both, with NaN-poisoned outputs, against
// the float64 reference: edge tiles (M not a multiple of 4 or, with tiles of 8 rows, of 8; N
// not of 8), K = 0 and past 1024,
// folded and broadcast batches, 1-D operands, Gemm's transposes, C broadcasts, alpha and beta,
// f16, a grid spread over two axes, and the reasons "texel" gives when it declines.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "backends/vulkan/vk_context.hpp"
#include "porta/util.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

Tensor random_input(const Shape& shape, DType dtype = DType::f32, double lo = -1, double hi = 1) {
  InputSpec s;
  s.shape = shape;
  s.lo = lo;
  s.hi = hi;
  return make_input(s, dtype);
}

struct Poisoned {
  Poisoned() { detail::set_poison_outputs(true, false); }
  ~Poisoned() { detail::set_poison_outputs(false); }
};

// Runs `name` on vulkan:0, expecting implementation `impl` to be chosen (with a reason for the
// earlier one containing `why`, when given), and compares with the float64 reference.
void expect_impl_match(const char* name, const std::vector<Tensor>& host, const Attributes& attrs,
                       const std::string& impl, const std::string& why = "") {
  std::vector<Tensor> dev = to_vk(host);
  Resolution r = resolve_vk(name, dev, attrs);
  ASSERT_EQ(r.path, Path::native) << name << ": " << r.reason;
  ASSERT_NE(r.kernel, nullptr);
  EXPECT_EQ(r.kernel->impl.name, impl) << name << " " << shape_str(host[0].shape()) << " x "
                                       << (host.size() > 1 ? shape_str(host[1].shape()) : "-") << ": " << r.reason;
  if (!why.empty()) EXPECT_NE(r.reason.find(why), std::string::npos) << name << ": " << r.reason;
  std::vector<Tensor> ref = reference_op(name, host, attrs, 1);
  std::vector<Tensor> got;
  {
    Poisoned poison;
    got = call_op(name, dev, attrs, 1);
  }
  ASSERT_EQ(got.size(), 1u);
  DType dt = host[0].dtype();
  Comparison cmp = compare(got[0], ref[0], dt == DType::f16 ? 4e-3 : default_tolerance(dt));
  EXPECT_TRUE(cmp.ok) << name << " (" << impl << ") " << dtype_name(dt) << " " << shape_str(host[0].shape())
                      << " x " << (host.size() > 1 ? shape_str(host[1].shape()) : "-") << ": " << cmp.message;
}

struct Case {
  const char* op;
  std::vector<Tensor> inputs;
  Attributes attrs;
  bool texel = true;  // "texel" takes it (else it declines, giving `why`)
  std::string why;
};

std::vector<Case> cases(DType dt) {
  const Attributes none, tb{{"transB", int64_t{1}}};
  auto in = [&](const Shape& s) { return random_input(s, dt); };
  std::vector<Case> c = {
      {"MatMul", {in({1, 4}), in({4, 4})}, none},
      {"MatMul", {in({3, 8}), in({8, 12})}, none},        // N % 8 == 4: half a tile
      {"MatMul", {in({5, 12}), in({12, 20})}, none},
      {"MatMul", {in({67, 36}), in({36, 100})}, none},
      {"MatMul", {in({9, 1028}), in({1028, 16})}, none},  // K past 1024
      {"MatMul", {in({3, 0}), in({0, 8})}, none},         // K = 0: zeros
      {"MatMul", {in({0, 8}), in({8, 8})}, none},         // M = 0: nothing to write
      {"MatMul", {in({2, 3, 16}), in({16, 8})}, none},    // batches fold into M
      {"MatMul", {in({2, 3, 16}), in({2, 16, 8})}, none},
      {"MatMul", {in({4, 1, 5, 8}), in({3, 8, 12})}, none},  // broadcast batches
      {"MatMul", {in({16}), in({16, 12})}, none},           // 1-D A
      {"Gemm", {in({7, 20}), in({13, 20}), in({13})}, {{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}}},
      {"Gemm", {in({7, 20}), in({13, 20}), in({7, 1})}, tb},
      {"Gemm", {in({7, 20}), in({13, 20}), in({1, 1})}, tb},
      {"Gemm", {in({7, 20}), in({13, 20})}, tb},
      {"Gemm", {in({6, 8}), in({8, 16}), in({6, 16})}, none},
      {"Gemm", {in({1, 64}), in({1000, 64}), in({1000})}, tb},  // a classifier head
      // K or N not a multiple of 4: the operands go through zero-padded copies.
      {"MatMul", {in({3, 6}), in({6, 8})}, none},
      {"MatMul", {in({3, 8}), in({8, 6})}, none},
      {"MatMul", {in({3, 16}), in({16})}, none},                  // 1-D B: N = 1
      {"MatMul", {in({2, 12, 17, 64}), in({2, 12, 64, 17})}, none},  // attention scores, N = 17
      {"MatMul", {in({2, 12, 17, 17}), in({2, 12, 17, 64})}, none},  // attention output, K = 17
      {"MatMul", {in({2, 3, 17}), in({17, 5})}, none},             // folded batches, both padded
      {"MatMul", {in({4, 1, 5, 7}), in({3, 7, 9})}, none},         // broadcast batches, both padded
      {"Gemm", {in({5, 7}), in({9, 7}), in({9})}, {{"transB", int64_t{1}}, {"beta", 0.5}}},
      {"Gemm", {in({5, 7}), in({7, 9}), in({5, 9})}, none},
      {"MatMul", {in({3, 0}), in({0, 5})}, none},  // K = 0 with N = 5: nothing to pad
      {"MatMul", {in({0, 7}), in({7, 5})}, none},  // M = 0 with K = 7
      {"Gemm", {in({3, 0}), in({5, 0}), in({5})}, {{"transB", int64_t{1}}, {"beta", 2.0}}},
      // At least 8 workgroups of 8 x 8 tiles: 8 rows per invocation, M not a multiple of 8.
      {"MatMul", {in({517, 36}), in({36, 67})}, none},
      {"MatMul", {in({3, 131, 20}), in({3, 20, 100})}, none},
      {"Gemm", {in({261, 12}), in({130, 12}), in({130})}, tb},
      // Declined by "texel", run by "tiled":
      {"Gemm", {in({8, 7}), in({8, 12})}, {{"transA", int64_t{1}}}, false, "transA"},
  };
  return c;
}

void run_cases(DType dt) {
  for (const Case& c : cases(dt)) {
    SCOPED_TRACE(testing::Message() << c.op << " " << shape_str(c.inputs[0].shape()) << " x "
                                    << shape_str(c.inputs[1].shape()));
    expect_impl_match(c.op, c.inputs, c.attrs, c.texel ? "texel" : "tiled", c.why);
  }
  // The same products through "tiled" alone.
  DisabledKernels tiled_only("vulkan:MatMul:texel,vulkan:Gemm:texel");
  for (const Case& c : cases(dt)) expect_impl_match(c.op, c.inputs, c.attrs, "tiled");
}

bool cpu_like() { return vk::context(0).caps().type == "cpu"; }

TEST(VulkanGemmVariants, F32MatchesReferenceThroughBothKernels) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU: \"texel\" is for CPU-like devices";
  run_cases(DType::f32);
}

TEST(VulkanGemmVariants, F16MatchesReferenceThroughBothKernels) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU: \"texel\" is for CPU-like devices";
  if (!vk::context(0).caps().fp16_storage) GTEST_SKIP() << "no 16-bit storage";
  run_cases(DType::f16);
}

// A grid spread over x and y (two workgroups along x at most: 221 tiles of 64 invocations).
TEST(VulkanGemmVariants, GridOverTwoAxes) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  vk::set_group_limit_override(0, 2);
  expect_impl_match("MatMul", {random_input({67, 36}), random_input({36, 100})}, {}, "texel");
  expect_impl_match("MatMul", {random_input({3, 67, 36}), random_input({3, 36, 100})}, {}, "texel");
  vk::set_group_limit_override(0, 0);
}

// Under a driver loop cap too small for K / 4 iterations, "texel" declines and "tiled" splits K
// over dispatches.
TEST(VulkanGemmVariants, LoopCapHandsLongKToTheTiledKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  LoopCapOverride cap(1221);
  expect_impl_match("MatMul", {random_input({9, 8192}), random_input({8192, 16})}, {}, "tiled", "K = 8192");
  expect_impl_match("MatMul", {random_input({9, 1024}), random_input({1024, 16})}, {}, "texel");
}

// A GPU-type device keeps the shared-memory kernel; the reason says why.
TEST(VulkanGemmVariants, GpuDevicesKeepTheTiledKernel) {
  REQUIRE_VULKAN();
  if (cpu_like()) GTEST_SKIP() << "vulkan:0 is CPU-like (covered above)";
  std::vector<Tensor> dev = to_vk({random_input({8, 8}), random_input({8, 8})});
  Resolution r = resolve_vk("MatMul", dev);
  ASSERT_NE(r.kernel, nullptr);
  EXPECT_EQ(r.kernel->impl.name, "tiled");
  EXPECT_NE(r.reason.find("shared-memory tiled GEMM suits it"), std::string::npos) << r.reason;
}

// Elementwise ops (kernels/vulkan/elementwise.cpp): "texel" writes whole vec4s and the last,
// partial one element by element. Sizes around the vec4 (0-9, 1023, 4097), a single-element
// operand on either side, f32 and f16, each op against the plain kernel and the reference.
TEST(VulkanTexelElementwise, MatchesReferenceAndThePlainKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  const std::vector<std::pair<const char*, Attributes>> unary = {
      {"Relu", {}}, {"Sigmoid", {}}, {"Exp", {}}, {"LeakyRelu", {{"alpha", 0.1}}}, {"HardSwish", {}}};
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 1023, 4097}) {
      // Divisors away from zero: quotients stay within f16's range.
      Tensor x = random_input({n}, dt), y = random_input({n}, dt, 0.5, 2);
      for (const auto& [op, attrs] : unary) {
        expect_impl_match(op, {x}, attrs, "texel");
        DisabledKernels plain(str("vulkan:", op, ":texel"));
        expect_impl_match(op, {x}, attrs, "");
      }
      for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
        Tensor s = random_input({1}, dt, 0.5, 2), s3 = random_input({1, 1}, dt, 0.5, 2);
        expect_impl_match(op, {x, y}, {}, "texel");
        expect_impl_match(op, {s, y}, {}, "texel");
        expect_impl_match(op, {x, s3}, {}, "texel");  // the output takes the single element's rank
        DisabledKernels plain(str("vulkan:", op, ":texel"));
        expect_impl_match(op, {x, y}, {}, "");
      }
    }
  }
  // One operand repeating over the other's leading axes (a bias): either side, f32 and f16.
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    Tensor big = random_input({2, 17, 12}, dt), bias = random_input({12}, dt, 0.5, 2),
           plane = random_input({1, 17, 12}, dt, 0.5, 2);
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      expect_impl_match(op, {big, bias}, {}, "texel");
      expect_impl_match(op, {bias, random_input({3, 12}, dt, 0.5, 2)}, {}, "texel");
      expect_impl_match(op, {big, plane}, {}, "texel");
      expect_impl_match(op, {random_input({1, 1, 8}, dt), random_input({5, 8}, dt, 0.5, 2)}, {}, "texel");
    }
  }
  // Operands that broadcast otherwise go to the plain kernel, which says why "texel" declined.
  expect_impl_match("Add", {random_input({3, 5}), random_input({5})}, {}, "", "the operands broadcast");
  expect_impl_match("Add", {random_input({4, 3, 8}), random_input({3, 1})}, {}, "", "the operands broadcast");
  expect_impl_match("Mul", {random_input({2, 8, 4, 4}), random_input({1, 8, 1, 1})}, {}, "", "the operands broadcast");
  // Clip reads its bounds from inputs 1 and 2.
  expect_impl_match("Clip", {random_input({37}), Tensor::scalar(-0.5, DType::f32), Tensor::scalar(0.25, DType::f32)}, {},
                    "texel");
  // An empty tensor.
  expect_impl_match("Relu", {random_input({0, 3})}, {}, "texel");
}

// Conv (kernels/vulkan/conv.cpp) on CPU-like devices: "depthwise" (group = input channels),
// then "im2col" (any group, 1-D and 2-D), each against the implementations after it and the
// reference: padding on every side, strides 1 and 2 (and 3 along H), dilation, a channel
// multiplier, outputs narrower than one vec4 and not a multiple of 4, with and without bias.
TEST(VulkanTexelConv, DepthwiseAndIm2colMatchReferenceAndTheGpuKernels) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  struct ConvCase {
    Shape x, w;
    Attributes attrs;
    bool bias;
    std::string impl;
  };
  auto a = [](int64_t group, V strides, V pads, V dil = {1, 1}) {
    return Attributes{{"group", group}, {"strides", strides}, {"pads", pads}, {"dilations", dil}};
  };
  const std::vector<ConvCase> cases = {
      {{1, 8, 9, 9}, {8, 1, 3, 3}, a(8, {1, 1}, {1, 1, 1, 1}), true, "depthwise"},
      {{2, 6, 11, 13}, {6, 1, 3, 3}, a(6, {2, 2}, {1, 1, 1, 1}), false, "depthwise"},
      {{1, 4, 10, 10}, {4, 1, 5, 5}, a(4, {1, 1}, {2, 2, 2, 2}), true, "depthwise"},
      {{1, 3, 12, 7}, {6, 1, 3, 3}, a(3, {3, 1}, {0, 1, 2, 0}), true, "depthwise"},  // multiplier 2
      {{1, 5, 9, 9}, {5, 1, 3, 3}, a(5, {1, 2}, {2, 2, 2, 2}, {2, 2}), false, "depthwise"},
      {{1, 2, 1, 3}, {2, 1, 1, 3}, a(2, {1, 1}, {0, 1, 0, 1}), true, "depthwise"},  // W < 4
      {{1, 8, 9, 9}, {16, 2, 3, 3}, a(4, {1, 1}, {1, 1, 1, 1}), true, "im2col"},   // grouped
      {{2, 3, 17, 15}, {5, 3, 7, 7}, a(1, {2, 2}, {3, 3, 3, 3}), true, "im2col"},  // K = 147
      {{1, 16, 7, 7}, {8, 16, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), false, "im2col"},
      {{1, 4, 6, 6}, {3, 4, 3, 3}, a(1, {1, 1}, {0, 0, 0, 0}, {2, 2}), true, "im2col"},
      {{2, 6, 20}, {4, 3, 3}, Attributes{{"group", int64_t{2}}, {"pads", V{1, 1}}}, true, "im2col"},  // 1-D
      {{1, 4, 9, 9}, {4, 1, 3, 3}, a(4, {1, 3}, {1, 1, 1, 1}), true, "depthwise"},  // stride 3 along W
  };
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const ConvCase& c : cases) {
      std::vector<Tensor> in = {random_input(c.x, dt), random_input(c.w, dt)};
      if (c.bias) in.push_back(random_input({c.w[0]}, dt));
      SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
      expect_impl_match("Conv", in, c.attrs, c.impl);
      DisabledKernels later(c.impl == "depthwise" ? "vulkan:Conv:depthwise" : "vulkan:Conv:depthwise,vulkan:Conv:im2col");
      expect_impl_match("Conv", in, c.attrs, c.impl == "depthwise" ? "im2col" : "implicit_gemm");
    }
  }
}

// The texel Conv kernels find their indices with common.glsl's div21 (a float division and two
// corrections) while every index is below 2^21, and with integer division past that: calls
// just under and just over the bound through "depthwise" (N x OC x OH x ceil(OW / 4)
// invocations) and "im2col" (4 x the columns' vec4s), against the float64 reference.
TEST(VulkanTexelConv, IndicesAroundTheDiv21Bound) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  auto a = [](int64_t group) {
    return Attributes{{"group", group}, {"pads", V{1, 1, 1, 1}}};
  };
  // depthwise: 64 x 255 x 64 = 1044480 and 2 x 64 x 255 x 64 = 2088960 (< 2^21 = 2097152),
  // then 2 x 64 x 256 x 64 = 2097152 (not below).
  for (const Shape& x : std::vector<Shape>{{1, 64, 255, 255}, {2, 64, 255, 255}, {2, 64, 256, 256}}) {
    SCOPED_TRACE(shape_str(x));
    expect_impl_match("Conv", {random_input(x), random_input({64, 1, 3, 3}), random_input({64})}, a(64), "depthwise");
  }
  // im2col: K = 288 rows of P positions: 288 x 7200 = 2073600 (< 2^21), 288 x 7396 = 2130048.
  for (const Shape& x : std::vector<Shape>{{1, 32, 80, 90}, {1, 32, 86, 86}}) {
    SCOPED_TRACE(shape_str(x));
    expect_impl_match("Conv", {random_input(x), random_input({8, 32, 3, 3}), random_input({8})}, a(1), "im2col");
  }
  // im2col by output rows (OW a multiple of 4: an invocation per (k, output row)): K = 9216
  // rows x 200 = 1843200 (< 2^21) and x 256 = 2359296 output rows.
  for (const Shape& x : std::vector<Shape>{{1, 1024, 200, 8}, {1, 1024, 256, 8}}) {
    SCOPED_TRACE(shape_str(x));
    expect_impl_match("Conv", {random_input(x), random_input({4, 1024, 3, 3}), random_input({4})}, a(1), "im2col");
  }
}

// What graph fusion folds into a Conv (vk_kernel.hpp's Epilogue, activation.glsl): every
// Vulkan Conv implementation applies the residual (input 3, porta_residual) and the activation
// (porta_activation with its alpha and beta) as Act(conv + residual), against the float64
// reference of the same call (ops/fused_activation.hpp): each activation with and without a
// residual through the texel GEMM, Clip/HardSigmoid/Elu (alpha and beta) with and without one
// through every implementation, in f32 and f16, the pointwise convolution whose X the texel GEMM reads in place,
// and the implicit GEMM with K split over dispatches by a loop cap (the epilogue in the last).
TEST(VulkanTexelConv, FusedResidualAndActivationOnEveryImplementation) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  auto a = [](int64_t group, V pads) {
    return Attributes{{"group", group}, {"strides", V{1, 1}}, {"pads", pads}};
  };
  struct Impl {
    std::string name, disabled;
    Shape x, w;
    Attributes attrs;
    uint64_t loop_cap = 0;
  };
  const std::string no_texel = "vulkan:Conv:depthwise,vulkan:Conv:im2col";
  const std::vector<Impl> impls = {
      {"depthwise", "", {1, 8, 9, 9}, {8, 1, 3, 3}, a(8, {1, 1, 1, 1})},
      {"im2col", "", {2, 8, 6, 6}, {12, 8, 1, 1}, a(1, {0, 0, 0, 0})},  // pointwise, X in place
      {"im2col", "", {1, 6, 7, 7}, {5, 6, 3, 3}, a(1, {1, 1, 1, 1})},   // columns
      {"implicit_gemm", no_texel, {1, 6, 7, 7}, {5, 6, 3, 3}, a(1, {1, 1, 1, 1})},
      {"implicit_gemm", no_texel, {1, 16, 5, 5}, {4, 16, 3, 3}, a(1, {1, 1, 1, 1}), 2000},  // K over 3 dispatches
      {"direct", no_texel + ",vulkan:Conv:implicit_gemm", {1, 6, 7, 7}, {6, 3, 3, 3}, a(2, {1, 0, 1, 0})},
  };
  struct Act {
    const char* name;
    double alpha = 0, beta = 0;
  };
  const std::vector<Act> acts = {{""},     {"Relu"},        {"Clip", -0.3, 0.4}, {"LeakyRelu", 0.2}, {"Sigmoid"},
                                 {"Tanh"}, {"HardSigmoid", 0.3, 0.45}, {"HardSwish"}, {"Elu", 0.8}, {"Swish"}};
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const Impl& impl : impls) {
      DisabledKernels disabled(impl.disabled);
      std::unique_ptr<LoopCapOverride> cap;
      if (impl.loop_cap) cap = std::make_unique<LoopCapOverride>(impl.loop_cap);
      std::vector<Tensor> in = {random_input(impl.x, dt), random_input(impl.w, dt, -0.5, 0.5),
                                random_input({impl.w[0]}, dt)};
      std::vector<Tensor> probe = {random_input(impl.x, dt), random_input(impl.w, dt), random_input({impl.w[0]}, dt)};
      Tensor y = reference_op("Conv", probe, impl.attrs, 1).at(0);
      // Every activation through one shader (activation.glsl is shared; each (ACT, HAS_RES)
      // is a pipeline lavapipe compiles), the wiring of alpha, beta and R through every one.
      const bool all = dt == DType::f32 && impl.name == "im2col" && impl.w[2] == 3;
      for (size_t k = 0; k < acts.size(); ++k) {
        const Act& act = acts[k];
        for (bool residual : {false, true}) {
          if (!all && !(k == 0 && !residual) && !(k == 2 && residual) && !(k == 6 && !residual) && !(k == 8 && residual))
            continue;
          SCOPED_TRACE(str(impl.name, " ", dtype_name(dt), " ", shape_str(impl.x), " * ", shape_str(impl.w), " ",
                           act.name, residual ? " + residual" : ""));
          Attributes attrs = impl.attrs;
          attrs.set("porta_activation", std::string(act.name));
          attrs.set("porta_activation_alpha", act.alpha);
          attrs.set("porta_activation_beta", act.beta);
          std::vector<Tensor> call = in;
          if (residual) call.push_back(random_input(y.shape(), dt, -2, 2));
          expect_impl_match("Conv", call, attrs, impl.name);
        }
      }
    }
  }
}

// A session on vulkan:0 folds the shortcut Add and the activations after Convs into them, as
// it does on the cpu, and computes the graph as written.
TEST(VulkanTexelConv, SessionsFoldResidualsAndActivationsIntoConvs) {
  REQUIRE_VULKAN();
  ReferenceGraph g;
  g.input("x", random_f32({1, 8, 10, 10}));
  g.initializer("w1", random_f32({8, 8, 3, 3}, -0.3, 0.3));
  g.initializer("b1", random_f32({8}));
  g.node("Conv", {"x", "w1", "b1"}, "y", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  g.node("Add", {"y", "x"}, "s");
  g.node("Relu", {"s"}, "r");
  g.initializer("w2", random_f32({12, 8, 1, 1}));
  g.node("Conv", {"r", "w2"}, "z");
  g.node("Sigmoid", {"z"}, "sg");
  g.node("Mul", {"z", "sg"}, "out");  // SiLU
  g.output("out");
  SessionOptions options;
  options.device = Device::parse("vulkan:0");
  Session session(g.model(), options);
  std::vector<NodePlan> plan = session.plan(g.inputs());
  for (const char* op : {"Add", "Relu", "Sigmoid", "Mul"}) EXPECT_EQ(nodes_of_op(plan, op), 0) << op;
  EXPECT_EQ(nodes_of_op(plan, "Conv"), 2);
  for (const NodePlan& p : plan) EXPECT_EQ(p.device, Device::parse("vulkan:0")) << p.node << ": " << p.reason;
  Comparison c = compare(session.run(g.inputs()).at(0), g.reference("out"), 1e-4);
  EXPECT_TRUE(c.ok) << c.message;
}

// Concat (kernels/vulkan/concat_split.cpp): "texel" (up to 8 inputs per dispatch, raw bits, 4
// elements per invocation; from 3 inputs on) against the reference and "copies" with
// NaN-poisoned outputs: channel Concats of 3 to 19 inputs (over several dispatches), the first
// and the last axis, a negative axis, an empty input, f32, i32 and f16; what it declines goes
// to "copies".
TEST(VulkanTexelElementwise, ConcatTexelMovesExactBits) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  struct ConcatCase {
    std::vector<Shape> inputs;
    int64_t axis;
  };
  std::vector<Shape> dense;
  for (int64_t k = 0; k < 19; ++k) dense.push_back({2, 1 + k % 5, 3, 4});
  const std::vector<ConcatCase> cases = {
      {{{1, 8, 4, 4}, {1, 4, 4, 4}, {1, 1, 4, 4}}, 1},
      {{{2, 3, 2, 2}, {2, 5, 2, 2}, {2, 1, 2, 2}}, 1},
      {dense, 1},
      {{{3, 4, 6}, {5, 4, 6}, {1, 4, 6}}, 0},
      {{{2, 3, 4}, {2, 3, 8}, {2, 3, 0}, {2, 3, 12}}, -1},
  };
  for (DType dt : {DType::f32, DType::i32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const ConcatCase& c : cases) {
      std::vector<Tensor> in;
      for (const Shape& s : c.inputs) in.push_back(random_input(s, dt, -100, 100));
      SCOPED_TRACE(str(dtype_name(dt), " ", c.inputs.size(), " inputs, axis ", c.axis));
      Attributes attrs{{"axis", c.axis}};
      expect_impl_match("Concat", in, attrs, "texel");
      DisabledKernels copies("vulkan:Concat:texel");
      expect_impl_match("Concat", in, attrs, "copies");
    }
  }
  expect_impl_match("Concat", {random_input({2, 3, 5}), random_input({2, 1, 5}), random_input({2, 2, 5})},
                    {{"axis", int64_t{1}}}, "copies", "not a multiple of 4");
  expect_impl_match("Concat", {random_input({2, 4}), random_input({2, 4})}, {{"axis", int64_t{1}}}, "copies",
                    "one texel copy each");
  expect_impl_match("Concat", {random_input({2, 4}, DType::i64), random_input({2, 4}, DType::i64)},
                    {{"axis", int64_t{0}}}, "copies", "i64 elements");
}

// Gather (kernels/vulkan/gather.cpp): "texel" (rows of a multiple of 4 elements moved 4 at a
// time as raw bits) against the reference and "elements", NaN-poisoned outputs: every axis,
// negative and repeated indices, a scalar index, f32, i32 and f16; rows that are no multiple of 4
// go to "elements".
TEST(VulkanTexelElementwise, GatherTexelMovesExactBits) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  auto ids = [](std::vector<int64_t> v, Shape s) { return Tensor::from_values(std::vector<double>(v.begin(), v.end()), s, DType::i64); };
  for (DType dt : {DType::f32, DType::i32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    Tensor data = random_input({3, 5, 3, 8}, dt, -50, 50);
    for (int64_t axis : {0, 1, 2, -2}) {
      SCOPED_TRACE(str(dtype_name(dt), " axis ", axis));
      Attributes attrs{{"axis", axis}};
      for (const Tensor& idx : {ids({2, 0, -1, 1, 1}, {5}), ids({1}, {}), ids({0, 1, -2, 0}, {2, 2})}) {
        expect_impl_match("Gather", {data, idx}, attrs, "texel");
        DisabledKernels elements("vulkan:Gather:texel");
        expect_impl_match("Gather", {data, idx}, attrs, "elements");
      }
    }
  }
  expect_impl_match("Gather", {random_input({4, 6}), ids({3, 0}, {2})}, {{"axis", int64_t{0}}}, "elements",
                    "rows of 6 elements");
}

// ReduceSum/Mean/Max/Min over trailing axes (kernels/vulkan/reduce.cpp): "rows" (one invocation
// per row, global_pool_rows.comp) against the reference and "workgroups" (reduce.comp), with
// NaN-poisoned outputs: the spatial axes of NCHW (keepdims 1 and 0), the last axis, trailing
// axes followed by unit axes, rows of 1, values offset by 1000 for the means and sums, NaN for
// max and min, f16; non-trailing axes go to "workgroups".
TEST(VulkanTexelElementwise, ReduceRowsMatchReferenceAndTheWorkgroupKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  struct RowsCase {
    Shape x;
    V axes;
    int64_t keepdims;
  };
  const std::vector<RowsCase> cases = {
      {{2, 16, 3, 5}, {2, 3}, 1}, {{2, 16, 3, 5}, {-2, -1}, 0}, {{3, 7}, {1}, 1}, {{4, 6, 1}, {1}, 0}, {{5, 1}, {1}, 1}};
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const RowsCase& c : cases) {
      for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
        const bool sums = op[6] == 'S' || op[7] == 'e';  // ReduceSum, ReduceMean
        Tensor x = random_input(c.x, dt, sums && dt == DType::f32 ? 999 : -3, sums && dt == DType::f32 ? 1001 : 3);
        if (!sums && dt == DType::f32) {  // a NaN in the first row
          std::vector<double> v = x.to_doubles();
          v[1] = NAN;
          x = Tensor::from_values(v, x.shape(), dt);
        }
        SCOPED_TRACE(str(op, " ", dtype_name(dt), " ", shape_str(c.x), " keepdims ", c.keepdims));
        Attributes attrs{{"axes", c.axes}, {"keepdims", c.keepdims}};
        expect_impl_match(op, {x}, attrs, "rows");
        DisabledKernels workgroups(str("vulkan:", op, ":rows"));
        expect_impl_match(op, {x}, attrs, "workgroups");
      }
    }
  }
  expect_impl_match("ReduceMean", {random_input({2, 3, 4})}, {{"axes", V{1}}}, "workgroups", "not the trailing ones");
}

// Gelu and BiasGelu (kernels/vulkan/bias_gelu.cpp): "texel" (4 elements per invocation, the
// last partial texel element by element) against the reference and "elements": both forms,
// sizes that are no multiple of 4, biases of 1, 3 and 5 channels (wrapping inside a texel), f16.
TEST(VulkanTexelElementwise, GeluTexelMatchesReferenceAndTheElementKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const char* mode : {"none", "tanh"}) {
      Attributes attrs{{"approximate", std::string(mode)}};
      for (const Shape& shape : std::vector<Shape>{{2, 8}, {3, 5}, {7, 3}, {1, 1}, {4, 1}}) {
        SCOPED_TRACE(str(dtype_name(dt), " ", mode, " ", shape_str(shape)));
        Tensor x = random_input(shape, dt, -6, 6);
        expect_impl_match("Gelu", {x}, attrs, "texel");
        std::vector<Tensor> biased = {x, random_input({shape.back()}, dt)};
        expect_impl_match("BiasGelu", biased, attrs, "texel");
        DisabledKernels elements("vulkan:Gelu:texel,vulkan:BiasGelu:texel");
        expect_impl_match("Gelu", {x}, attrs, "elements");
        expect_impl_match("BiasGelu", biased, attrs, "elements");
      }
    }
  }
}

// BatchNormalization (kernels/vulkan/norms.cpp): "texel" (4 elements of a channel per
// invocation) and "elements" against the float64 reference, with the activations graph fusion
// folds into it (activation.glsl), in f32 and f16; a spatial size that is no multiple of 4 goes
// to "elements".
TEST(VulkanTexelElementwise, BatchNormTexelAndElementsApplyFusedActivations) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  struct Act {
    const char* name;
    double alpha = 0, beta = 0;
  };
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const Shape& shape : std::vector<Shape>{{2, 6, 4, 4}, {1, 3, 20}, {3, 5, 7}}) {
      const int64_t C = shape[1];
      std::vector<Tensor> in = {random_input(shape, dt, -3, 3), random_input({C}, dt), random_input({C}, dt),
                                random_input({C}, dt), random_input({C}, dt, 0.5, 2)};
      const bool texel = shape.back() % 4 == 0;
      for (const Act& act : {Act{""}, Act{"Relu"}, Act{"Clip", -0.5, 0.8}, Act{"LeakyRelu", 0.1}, Act{"HardSwish"}}) {
        SCOPED_TRACE(str(dtype_name(dt), " ", shape_str(shape), " ", act.name));
        Attributes attrs{{"epsilon", 1e-3}, {"porta_activation", std::string(act.name)},
                         {"porta_activation_alpha", act.alpha}, {"porta_activation_beta", act.beta}};
        expect_impl_match("BatchNormalization", in, attrs, texel ? "texel" : "elements",
                          texel ? "" : "not a multiple of 4");
        DisabledKernels elements("vulkan:BatchNormalization:texel");
        expect_impl_match("BatchNormalization", in, attrs, "elements");
      }
    }
  }
}

// MaxPool / AveragePool (kernels/vulkan/pool.cpp): "window" (pool_window.comp, 2-D, inputs
// gathered as one-element texels) against the float64 reference and "taps" (pool.comp) on the
// same calls, NaN-poisoned outputs: strides, pads, dilations, ceil_mode, windows past the input,
// count_include_pad both ways, rows shorter than 4, f16, NaN inputs (MaxPool takes NaN only as a
// window's first tap, as "taps" and the cpu do: the same bits from both); 1-D pools stay on "taps".
TEST(VulkanTexelElementwise, PoolWindowMatchesReferenceAndTheTapsKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  struct PoolCase {
    Shape x;
    Attributes attrs;
  };
  auto a = [](V kernel, V strides, V pads, V dil = {1, 1}, int64_t ceil = 0) {
    return Attributes{{"kernel_shape", kernel}, {"strides", strides}, {"pads", pads}, {"dilations", dil},
                      {"ceil_mode", ceil}};
  };
  const std::vector<PoolCase> cases = {
      {{1, 3, 13, 13}, a({3, 3}, {2, 2}, {1, 1, 1, 1})},
      {{2, 4, 9, 11}, a({3, 2}, {1, 3}, {0, 1, 2, 0}, {2, 1})},
      {{1, 2, 7, 7}, a({3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1)},  // ceil_mode: windows past the input
      {{1, 5, 2, 3}, a({2, 2}, {1, 1}, {1, 1, 1, 1})},             // rows shorter than 4
      {{1, 8, 16, 16}, a({2, 2}, {2, 2}, {0, 0, 0, 0})},
  };
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const PoolCase& c : cases) {
      for (const char* op : {"MaxPool", "AveragePool"}) {
        for (int64_t include_pad : {0, 1}) {
          if (std::string(op) == "MaxPool" && include_pad) continue;
          Attributes attrs = c.attrs;
          if (std::string(op) == "AveragePool") {
            if (c.attrs.get_ints("dilations") != V{1, 1}) continue;  // AveragePool takes dilations from opset 19
            attrs.set("count_include_pad", include_pad);
          }
          SCOPED_TRACE(str(op, " ", dtype_name(dt), " ", shape_str(c.x), " count_include_pad ", include_pad));
          Tensor x = random_input(c.x, dt, -3, 3);
          expect_impl_match(op, {x}, attrs, "window");
          DisabledKernels taps(str("vulkan:", op, ":window"));
          expect_impl_match(op, {x}, attrs, "taps");
        }
      }
    }
  }
  // NaN: the same bits through both kernels.
  std::vector<double> values(2 * 6 * 6);
  for (size_t k = 0; k < values.size(); ++k) values[k] = k % 7 == 0 ? NAN : std::sin(double(k));
  Tensor x = Tensor::from_values(values, {1, 2, 6, 6}, DType::f32);
  Attributes attrs = a({3, 3}, {1, 1}, {1, 1, 1, 1});
  std::vector<double> window = call_op("MaxPool", to_vk({x}), attrs, 1).at(0).to(Device::cpu()).to_doubles();
  std::vector<double> taps;
  {
    DisabledKernels off("vulkan:MaxPool:window");
    taps = call_op("MaxPool", to_vk({x}), attrs, 1).at(0).to(Device::cpu()).to_doubles();
  }
  ASSERT_EQ(window.size(), taps.size());
  for (size_t k = 0; k < window.size(); ++k)
    EXPECT_TRUE(window[k] == taps[k] || (std::isnan(window[k]) && std::isnan(taps[k]))) << k << ": " << window[k] << " vs " << taps[k];
  // MaxPool's Indices asked for in an eager call: written (pool.comp), as the reference has them.
  {
    Tensor xi = random_input({1, 3, 7, 9});
    Attributes ai = a({3, 3}, {2, 2}, {1, 1, 1, 1});
    std::vector<Tensor> ref = reference_op("MaxPool", {xi}, ai, 2);
    std::vector<Tensor> got;
    {
      Poisoned poison;
      got = call_op("MaxPool", to_vk({xi}), ai, 2);
    }
    ASSERT_EQ(got.size(), 2u);
    for (size_t k = 0; k < 2; ++k) {
      Comparison cmp = compare(got[k], ref[k], 1e-6);
      EXPECT_TRUE(cmp.ok) << "MaxPool output " << k << ": " << cmp.message;
    }
  }
  // 1-D pools are left to "taps", with the reason; 2-D ones go to "window".
  EXPECT_NE(resolve_vk("MaxPool", to_vk({random_input({1, 2, 9})}), {{"kernel_shape", V{3}}}).reason.find("not a 2-D pool"),
            std::string::npos);
  Resolution r = resolve_vk("MaxPool", to_vk({random_input({1, 2, 9, 9})}), {{"kernel_shape", V{3, 3}}});
  EXPECT_EQ(r.kernel ? r.kernel->impl.name : "", "window");
}

// LSTM and GRU (kernels/vulkan/rnn.cpp): "steps" (one texel GEMM for the input projections,
// then one dispatch per time step) against the float64 reference and "sequence" (rnn.comp),
// every output (Y, Y_h, Y_c) poisoned before the call: both directions and bidirectional, both
// layouts, sequence lengths shorter than the sequence (and 0), initial states, peepholes, clip,
// no bias, a batch of 3; and the calls "steps" declines, with the reason.
TEST(VulkanTexelRnn, StepsMatchReferenceAndTheSequenceKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  struct RnnCase {
    const char* op;
    std::string direction;
    int64_t layout = 0, seq = 5, batch = 3, input = 8, hidden = 8;
    bool bias = true, lens = false, initial = false, peepholes = false;
    double clip = 0;
  };
  const std::vector<RnnCase> cases = {
      {"LSTM", "forward"},
      {"LSTM", "reverse", 0, 6, 3, 4, 12, true, true, true},
      {"LSTM", "bidirectional", 1, 4, 3, 8, 4, false, true, true, true},
      {"LSTM", "forward", 1, 7, 1, 12, 8, true, false, true, true, 0.5},
      {"GRU", "forward"},
      {"GRU", "bidirectional", 0, 5, 3, 8, 8, true, true, true},
      {"GRU", "reverse", 1, 6, 2, 4, 16, false, true, false, false, 0.7},
  };
  for (const RnnCase& c : cases) {
    const int64_t gates = std::string(c.op) == "LSTM" ? 4 : 3, dirs = c.direction == "bidirectional" ? 2 : 1;
    SCOPED_TRACE(str(c.op, " ", c.direction, " layout ", c.layout, " seq ", c.seq, " batch ", c.batch, " input ",
                     c.input, " hidden ", c.hidden, c.lens ? " lens" : "", c.initial ? " initial" : "",
                     c.peepholes ? " peepholes" : "", c.clip ? " clip" : ""));
    Attributes attrs{{"hidden_size", c.hidden}, {"direction", c.direction}, {"layout", c.layout}};
    if (gates == 3) attrs.set("linear_before_reset", int64_t{1});
    if (c.clip) attrs.set("clip", c.clip);
    const Shape x = c.layout ? Shape{c.batch, c.seq, c.input} : Shape{c.seq, c.batch, c.input};
    const Shape state = c.layout ? Shape{c.batch, dirs, c.hidden} : Shape{dirs, c.batch, c.hidden};
    std::vector<Tensor> in = {random_input(x), random_input({dirs, gates * c.hidden, c.input}),
                              random_input({dirs, gates * c.hidden, c.hidden}),
                              c.bias ? random_input({dirs, 2 * gates * c.hidden}) : Tensor()};
    if (c.lens) {
      std::vector<int32_t> lens;
      for (int64_t b = 0; b < c.batch; ++b) lens.push_back(static_cast<int32_t>(b == 1 ? 0 : c.seq - b));
      in.push_back(Tensor::from_host(lens.data(), {c.batch}, DType::i32, Device::cpu()));
    } else {
      in.push_back(Tensor());
    }
    in.push_back(c.initial ? random_input(state) : Tensor());
    if (gates == 4) {
      in.push_back(c.initial ? random_input(state) : Tensor());
      in.push_back(c.peepholes ? random_input({dirs, 3 * c.hidden}) : Tensor());
    }
    while (!in.back().defined()) in.pop_back();
    const int outputs = static_cast<int>(gates == 4 ? 3 : 2);
    std::vector<Tensor> ref = reference_op(c.op, in, attrs, outputs);
    for (const char* impl : {"steps", "sequence"}) {
      DisabledKernels only(impl == std::string("steps") ? "" : str("vulkan:", c.op, ":steps"));
      Resolution r = resolve_vk(c.op, to_vk(in), attrs);
      ASSERT_EQ(r.path, Path::native) << r.reason;
      EXPECT_EQ(r.kernel->impl.name, impl) << r.reason;
      std::vector<Tensor> got;
      {
        Poisoned poison;
        got = call_op(c.op, to_vk(in), attrs, outputs);
      }
      ASSERT_EQ(got.size(), ref.size());
      for (size_t k = 0; k < got.size(); ++k) {
        Comparison cmp = compare(got[k], ref[k], 1e-5);
        EXPECT_TRUE(cmp.ok) << impl << " output " << k << ": " << cmp.message;
      }
    }
  }
  // What "steps" declines goes to "sequence", saying why.
  auto reason = [&](const char* op, int64_t input, int64_t hidden, Attributes attrs) {
    const int64_t gates = std::string(op) == "LSTM" ? 4 : 3;
    attrs.set("hidden_size", hidden);
    Resolution r = resolve_vk(op, to_vk({random_input({3, 1, input}), random_input({1, gates * hidden, input}),
                                        random_input({1, gates * hidden, hidden})}),
                              attrs);
    EXPECT_EQ(r.kernel ? r.kernel->impl.name : "", "sequence");
    return r.reason;
  };
  EXPECT_NE(reason("LSTM", 5, 8, {}).find("not a multiple of 4"), std::string::npos);
  EXPECT_NE(reason("GRU", 8, 8, {}).find("linear_before_reset = 0"), std::string::npos);
}

// Softmax / LogSoftmax over the innermost axis (kernels/vulkan/softmax.cpp): "rows", one
// invocation per row read as texels, against the workgroup kernel and the reference; rows of
// 4 to 4096 (vec4 texels) and of 1, 6, 49 and 1001 (one element per texel), values offset by
// 1000 (the maximum must be subtracted), and the calls it declines.
TEST(VulkanTexelElementwise, SoftmaxRowsMatchReferenceAndTheWorkgroupKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const Shape& shape : std::vector<Shape>{{1, 4}, {3, 8}, {2, 4, 16, 16}, {5, 4096}, {7, 1, 36}, {3, 6},
                                                 {2, 3, 49}, {4, 1}, {2, 1001}}) {  // the last four: one element per texel
      for (double offset : {0.0, 1000.0}) {
        if (dt == DType::f16 && offset > 0) continue;  // f16 has no resolution left at 1000
        Tensor x = random_input(shape, dt, offset - 4, offset + 4);
        for (const char* op : {"Softmax", "LogSoftmax"}) {
          expect_impl_match(op, {x}, {}, "rows");
          DisabledKernels plain(str("vulkan:", op, ":rows"));
          expect_impl_match(op, {x}, {}, "");
        }
      }
    }
  }
  expect_impl_match("Softmax", {random_input({4, 8, 3})}, {{"axis", int64_t{1}}}, "", "not the innermost");
}

// Data movement (kernels/vulkan/movement.cpp): plans whose innermost axis is contiguous and a
// multiple of 4 move 4 elements per invocation as raw bits (copy_texel.comp); plans whose
// destination rows are contiguous and a multiple of 4 but whose source is not (a Transpose
// moving the innermost axis, an innermost step or broadcast) gather 4 elements per invocation
// (copy_gather.comp; 32-bit elements also one at a time into rows of any length). Each call's
// bytes must equal the cpu's exactly (NaN payloads included), for 32- and 16-bit elements, and
// for plans that do not qualify (copy.comp) alike.
TEST(VulkanTexelElementwise, CopiesMoveTheExactBits) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  auto ints = [](const V& v) { return Tensor::from_values(std::vector<double>(v.begin(), v.end()), {static_cast<int64_t>(v.size())}, DType::i64); };
  for (DType dt : {DType::f32, DType::i32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    Tensor x = random_input({2, 6, 3, 8}, dt == DType::i32 ? DType::f32 : dt, -100, 100);
    if (dt == DType::i32) x = call_op("Cast", {x}, {{"to", int64_t{6}}}).at(0);
    if (dt == DType::f32) {  // a NaN with a payload, which must arrive bit for bit
      std::vector<uint32_t> bits(static_cast<size_t>(x.numel()));
      x.copy_to_host(bits.data(), bits.size() * 4);
      bits[5] = 0x7fc01234u;
      x = Tensor::from_host(bits.data(), x.shape(), DType::f32, Device::cpu());
    }
    struct Call {
      const char* op;
      std::vector<Tensor> in;
      Attributes attrs;
    };
    Tensor y = call_op("Slice", {x, ints({0}), ints({4}), ints({1})}).at(0);  // 2x4x3x8
    Tensor z = call_op("Reshape", {call_op("Slice", {x, ints({0}), ints({1}), ints({0})}).at(0), ints({1, 6, 3, 4, 1, 2})}).at(0);
    const std::vector<Call> calls = {
        {"Transpose", {y}, {{"perm", V{0, 2, 3, 1}}}},                  // NCHW -> NHWC: gathered
        {"Transpose", {y}, {{"perm", V{0, 3, 2, 1}}}},                  // gathered
        {"Transpose", {z}, {{"perm", V{0, 2, 4, 3, 5, 1}}}},            // rows of 6: gathered one by one (32-bit)
        {"Transpose", {call_op("Reshape", {y, ints({1, 8, 2, 3, 2, 2})}).at(0)}, {{"perm", V{0, 2, 4, 3, 5, 1}}}},  // gathered
        {"Slice", {x, ints({0}), ints({8}), ints({3}), ints({2})}, {}},  // innermost step 2: gathered
        {"Expand", {call_op("Slice", {x, ints({0}), ints({1}), ints({3})}).at(0), ints({2, 6, 3, 8})}, {}},  // gathered
        {"Transpose", {x}, {{"perm", V{0, 2, 1, 3}}}},                  // texel
        {"Transpose", {x}, {{"perm", V{0, 1, 3, 2}}}},                  // innermost axis moves: plain
        {"Slice", {x, ints({1}), ints({5}), ints({1})}, {}},            // texel
        {"Slice", {x, ints({-1}), ints({-3}), ints({0}), ints({-1})}, {}},  // negative step, texel
        {"Slice", {x, ints({1}), ints({7}), ints({3})}, {}},            // innermost sliced: plain
        {"Concat", {x, x}, {{"axis", int64_t{1}}}},                     // texel
        {"Concat", {x, x}, {{"axis", int64_t{3}}}},                     // texel into strided rows
        {"Concat", {call_op("Slice", {x, ints({0}), ints({3}), ints({3})}).at(0), call_op("Slice", {x, ints({0}), ints({1}), ints({3})}).at(0)},
         {{"axis", int64_t{3}}}},                                       // rows of 3 and 1 into rows of 4: one by one
        {"Expand", {call_op("Slice", {x, ints({0}), ints({1}), ints({0})}).at(0), ints({3, 6, 3, 8})}, {}},
        {"Tile", {x, ints({1, 2, 1, 1})}, {}},
    };
    for (const Call& c : calls) {
      std::vector<Tensor> want = call_op(c.op, c.in, c.attrs);
      std::vector<Tensor> got;
      {
        Poisoned poison;
        got = call_op(c.op, to_vk(c.in), c.attrs);
      }
      ASSERT_EQ(got.size(), want.size());
      Tensor g = got[0].to(Device::cpu()).contiguous(), w = want[0].contiguous();
      ASSERT_EQ(g.shape(), w.shape()) << c.op;
      std::vector<uint8_t> gb(g.nbytes()), wb(w.nbytes());
      g.copy_to_host(gb.data(), gb.size());
      w.copy_to_host(wb.data(), wb.size());
      EXPECT_EQ(gb, wb) << c.op << " " << dtype_name(dt) << " " << shape_str(w.shape());
    }
  }
}

// LayerNormalization (kernels/vulkan/norms.cpp): "rows" against the workgroup kernel and the
// reference; normalised sizes 4 to 3072 over one or two axes, scale/bias that broadcast, no
// bias, an offset mean (the two-pass variance), and the calls it declines.
TEST(VulkanTexelElementwise, LayerNormRowsMatchReferenceAndTheWorkgroupKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  struct LnCase {
    Shape x, scale;
    int64_t axis;
    bool bias;
  };
  const std::vector<LnCase> cases = {
      {{3, 4}, {4}, -1, true},       {{2, 17, 768}, {768}, -1, true}, {{5, 3072}, {3072}, -1, false},
      {{2, 3, 4, 8}, {4, 8}, 2, true}, {{2, 3, 4, 8}, {1, 8}, 2, true},  // scale broadcast over the axes
  };
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const LnCase& c : cases) {
      std::vector<Tensor> in = {random_input(c.x, dt, -3, 3), random_input(c.scale, dt)};
      if (c.bias) in.push_back(random_input(c.scale, dt));
      Attributes attrs{{"axis", c.axis}};
      SCOPED_TRACE(shape_str(c.x));
      expect_impl_match("LayerNormalization", in, attrs, "rows");
      if (dt == DType::f32) {  // rows around 100 with a spread of 2: the mean must not eat the spread
        std::vector<Tensor> offset = in;
        offset[0] = random_input(c.x, dt, 99, 101);
        expect_impl_match("LayerNormalization", offset, attrs, "rows");
      }
      DisabledKernels plain("vulkan:LayerNormalization:rows");
      expect_impl_match("LayerNormalization", in, attrs, "");
    }
  }
  expect_impl_match("LayerNormalization", {random_input({3, 6}), random_input({6})}, {}, "", "rows of 6 elements");
  // Mean and InvStdDev asked for: all three outputs right (the workgroup kernel writes them).
  std::vector<Tensor> in = {random_input({4, 8}), random_input({8}), random_input({8})};
  std::vector<Tensor> ref = reference_op("LayerNormalization", in, {}, 3);
  std::vector<Tensor> got;
  {
    Poisoned poison;
    got = call_op("LayerNormalization", to_vk(in), {}, 3);
  }
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    Comparison cmp = compare(got[i], ref[i], default_tolerance(DType::f32));
    EXPECT_TRUE(cmp.ok) << "output " << i << ": " << cmp.message;
  }
}

// GlobalAveragePool / GlobalMaxPool (kernels/vulkan/pool.cpp): "rows", one invocation per
// plane on CPU-like devices, against the workgroup reduction and the reference; planes of 1 to
// 12544 elements (the fp32 Kahan sum over a 112x112 plane), a NaN in a max, and the loop cap.
TEST(VulkanTexelElementwise, GlobalPoolRowsMatchReferenceAndTheWorkgroupKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const Shape& shape : std::vector<Shape>{{1, 1, 1, 1}, {2, 3, 7, 7}, {1, 5, 112, 112}, {3, 4, 5}, {1, 70, 1, 9}}) {
      // Values around 50 (f32): the mean of a long plane must not drift with the sum.
      Tensor x = dt == DType::f32 ? random_input(shape, dt, 49, 51) : random_input(shape, dt);
      for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
        expect_impl_match(op, {x}, {}, "rows");
        DisabledKernels plain(str("vulkan:", op, ":rows"));
        expect_impl_match(op, {x}, {}, "");
      }
    }
  }
  std::vector<float> v(2 * 9, 0.5f);
  v[13] = std::numeric_limits<float>::quiet_NaN();
  Tensor nan = Tensor::from_host(v.data(), {1, 2, 3, 3}, DType::f32, Device::cpu());
  std::vector<double> got = call_op("GlobalMaxPool", to_vk({nan}), {}, 1).at(0).to_doubles();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], 0.5);
  EXPECT_TRUE(std::isnan(got[1]));
  // A plane longer than the loop cap allows goes to the workgroup kernel, which splits it.
  LoopCapOverride cap(1000);
  expect_impl_match("GlobalAveragePool", {random_input({1, 2, 40, 40})}, {}, "", "a plane of 1600 elements");
}

}  // namespace
}  // namespace porta::test
