// The GEMM, Conv and RNN kernels for CPU-like Vulkan devices (implementations that read
// operands through uniform texel buffers) against the implementations GPUs keep, on the same
// calls; the other such kernels are in tests/vulkan_texel_data_test.cpp.
//
// MatMul and Gemm have two implementations here (kernels/vulkan/matmul.cpp; Gemm's third,
// "rows", has tests/vulkan_gemm_rows_test.cpp): "texel", the
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
#include <tuple>

#include "backends/vulkan/vk_context.hpp"
#include "porta/util.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"
#include "tests/vulkan_texel_test_util.hpp"

namespace porta::test {
namespace {

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
      // Tiles of up to 32 rows, balanced over M (matmul.cpp's texel_tiling), in workgroups
      // shrunk to keep 8 of them: one tile of 17 rows (K = 768), two of 32 (K = 520), three of
      // 15 (short K: at most 16), two of 17 with C and transB; few tiles: down to 4 rows.
      {"MatMul", {in({17, 768}), in({768, 520})}, none},
      {"MatMul", {in({64, 520}), in({520, 512})}, none},
      {"MatMul", {in({45, 36}), in({36, 520})}, none},
      {"Gemm", {in({33, 516}), in({520, 516}), in({520})}, tb},
      {"MatMul", {in({17, 768}), in({768, 64})}, none},
      // Declined by "texel", run by "tiled":
      {"Gemm", {in({8, 7}), in({8, 12})}, {{"transA", int64_t{1}}}, false, "transA"},
  };
  return c;
}

void run_cases(DType dt) {
  // "rows" takes MatMul (1-D or 2-D B) and Gemm with at most 8 rows of A before "texel"
  // (tests/vulkan_gemm_rows_test.cpp); here "texel" runs them too.
  DisabledKernels no_rows("vulkan:MatMul:rows,vulkan:Gemm:rows");
  for (const Case& c : cases(dt)) {
    SCOPED_TRACE(testing::Message() << c.op << " " << shape_str(c.inputs[0].shape()) << " x "
                                    << shape_str(c.inputs[1].shape()));
    expect_impl_match(c.op, c.inputs, c.attrs, c.texel ? "texel" : "tiled", c.why);
  }
  // The same products through "tiled" alone.
  DisabledKernels tiled_only(kTexelGemmKernels);
  for (const Case& c : cases(dt)) expect_impl_match(c.op, c.inputs, c.attrs, "tiled");
}

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

// Conv (kernels/vulkan/conv.cpp) on CPU-like devices: "depthwise_rows" and "depthwise" (group =
// input channels), "grouped_rows" (groups of 2 to 8 input channels, with channel multipliers
// and strides; 16 per group stays "im2col"), "rows" (one output per image reading the whole
// image, up to 8 images, K padded to whole texels; at most 16 output positions per image, over
// the columns or X in place, all of an image's positions in one chunk), then "im2col" (any group, 1-D to 3-D),
// each against the implementations
// after it and the reference: padding on every side (past 4 too), strides 1, 2 and 3, dilation,
// a channel multiplier, kernels up to 11 wide, outputs narrower than one vec4 or one row of 8
// and not a multiple of 4, input widths that are multiples of 4 (rows read as 4-element
// texels) and not, with and without bias.
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
      {{1, 8, 9, 9}, {8, 1, 3, 3}, a(8, {1, 1}, {1, 1, 1, 1}), true, "depthwise_rows"},
      {{2, 6, 11, 13}, {6, 1, 3, 3}, a(6, {2, 2}, {1, 1, 1, 1}), false, "depthwise_rows"},
      {{1, 4, 10, 10}, {4, 1, 5, 5}, a(4, {1, 1}, {2, 2, 2, 2}), true, "depthwise_rows"},
      {{1, 3, 12, 7}, {6, 1, 3, 3}, a(3, {3, 1}, {0, 1, 2, 0}), true, "depthwise_rows"},  // multiplier 2
      {{1, 5, 9, 9}, {5, 1, 3, 3}, a(5, {1, 2}, {2, 2, 2, 2}, {2, 2}), false, "depthwise_rows"},
      {{1, 2, 1, 3}, {2, 1, 1, 3}, a(2, {1, 1}, {0, 1, 0, 1}), true, "depthwise_rows"},  // W < 4
      // Grouped, at most 8 input channels per group: the depthwise rows over each group's channels.
      {{1, 8, 9, 9}, {16, 2, 3, 3}, a(4, {1, 1}, {1, 1, 1, 1}), true, "grouped_rows"},
      {{2, 24, 7, 7}, {24, 8, 3, 3}, a(3, {2, 2}, {1, 1, 1, 1}), true, "grouped_rows"},   // RegNet's groups of 8
      {{1, 16, 6, 12}, {8, 4, 3, 3}, a(4, {1, 1}, {2, 2, 2, 2}, {2, 2}), false, "grouped_rows"},  // 4-element texels
      {{1, 12, 5, 9}, {36, 4, 1, 5}, a(3, {1, 2}, {0, 2, 0, 2}), true, "grouped_rows"},  // 12 outputs per group
      {{1, 32, 4, 4}, {32, 16, 3, 3}, a(2, {1, 1}, {1, 1, 1, 1}), true, "im2col"},  // 16 channels per group
      // One output per image reading all of it: the images are the product's rows (K = 6 and
      // 45: padded); past 8 images, one product per image.
      {{1, 96, 1, 1}, {24, 96, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},  // squeeze-excite
      {{3, 6, 1, 1}, {10, 6, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), false, "rows"},
      {{4, 5, 3, 3}, {7, 5, 3, 3}, a(1, {2, 2}, {0, 0, 0, 0}), true, "rows"},
      {{8, 8, 1, 1}, {4, 8, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},  // 8 images
      {{11, 6, 2, 2}, {37, 6, 2, 2}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},  // 11 images, 37 rows of W
      // Small maps: X (C, P) in place where C and P are multiples of 4, else the columns; the
      // product's rows are the positions, up to 16 in one chunk (W read once per image).
      {{1, 32, 2, 2}, {24, 32, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},
      {{1, 8, 1, 4}, {5, 8, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), false, "rows"},
      {{1, 16, 2, 2}, {24, 16, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},  // more outputs than inputs
      {{1, 8, 1, 3}, {5, 8, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), false, "rows"},    // 3 positions
      {{1, 12, 3, 3}, {8, 12, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},   // 9 positions
      {{2, 16, 2, 2}, {8, 16, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},   // 2 images
      {{1, 6, 2, 2}, {8, 6, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},     // 6 channels: columns
      {{1, 8, 3, 3}, {8, 8, 1, 1}, a(1, {2, 2}, {0, 0, 0, 0}), true, "rows"},     // stride 2
      {{1, 4, 3, 3}, {4, 4, 3, 3}, a(1, {1, 1}, {1, 1, 1, 1}), true, "rows"},     // padded: 3x3 outputs
      {{3, 13, 6, 6}, {70, 13, 3, 3}, a(1, {2, 2}, {1, 0, 1, 0}), true, "rows"},  // 3x3 of 3 images, K = 117
      {{2, 24, 4, 4}, {33, 24, 3, 3}, a(1, {1, 1}, {1, 1, 1, 1}), false, "rows"}, // 16 positions: the most it takes
      {{1, 8, 3, 5}, {9, 8, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "rows"},     // 15 positions
      {{1, 8, 4, 5}, {9, 8, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "im2col"},   // 20 positions
      {{2, 3, 17, 15}, {5, 3, 7, 7}, a(1, {2, 2}, {3, 3, 3, 3}), true, "im2col"},  // K = 147
      // Pointwise over maps whose positions are no multiple of 4 (49, 25, 21): X in place, one
      // element per texel (the texel GEMM's B_SCALAR), images and groups at any element offset.
      {{1, 16, 7, 7}, {8, 16, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), false, "im2col"},
      {{3, 12, 5, 5}, {13, 12, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "im2col"},
      {{2, 32, 3, 7}, {32, 16, 1, 1}, a(2, {1, 1}, {0, 0, 0, 0}), true, "im2col"},
      {{2, 12, 5, 5}, {20, 12, 1, 1}, a(1, {1, 1}, {0, 0, 0, 0}), true, "im2col"},
      {{1, 4, 6, 6}, {3, 4, 3, 3}, a(1, {1, 1}, {0, 0, 0, 0}, {2, 2}), true, "rows"},  // dilated: 2x2
      {{1, 4, 9, 9}, {3, 4, 3, 3}, a(1, {1, 1}, {0, 0, 0, 0}, {2, 2}), true, "im2col"},
      {{2, 6, 20}, {4, 3, 3}, Attributes{{"group", int64_t{2}}, {"pads", V{1, 1}}}, true, "im2col"},  // 1-D
      // Output rows not a multiple of 4 wide (5, 6, 7, 9, 13): vec4s running into the next row,
      // the last row's into the pad columns; strides, dilation, padding, groups, 2 images.
      {{2, 32, 9, 9}, {8, 16, 3, 3}, a(2, {1, 1}, {1, 0, 1, 0}), true, "im2col"},        // 9 x 7
      {{1, 5, 11, 13}, {4, 5, 3, 3}, a(1, {2, 2}, {1, 1, 1, 1}), false, "im2col"},       // 6 x 7
      {{1, 3, 10, 10}, {6, 3, 3, 3}, a(1, {1, 2}, {2, 1, 2, 1}, {2, 1}), true, "im2col"}, // 10 x 5
      {{1, 7, 4, 13}, {3, 7, 1, 3}, a(1, {1, 1}, {0, 1, 0, 1}), true, "im2col"},         // 4 x 13
      {{3, 2, 6, 6}, {4, 2, 2, 2}, a(1, {1, 1}, {0, 0, 0, 0}), false, "im2col"},         // 5 x 5
      // 3-D: the columns' depth axis (taps kd, planes od), with strides, padding, dilation
      // and groups; pointwise 3-D read in place.
      {{1, 4, 5, 6, 7}, {6, 4, 3, 3, 3}, Attributes{{"pads", V{1, 1, 1, 1, 1, 1}}}, true, "im2col"},
      {{2, 6, 6, 9, 8}, {4, 3, 3, 1, 3}, Attributes{{"group", int64_t{2}}, {"strides", V{2, 1, 2}},
                                                   {"pads", V{1, 0, 2, 0, 0, 1}}, {"dilations", V{1, 1, 2}}},
       false, "im2col"},
      {{1, 3, 8, 16, 16}, {8, 3, 3, 7, 7}, Attributes{{"strides", V{1, 2, 2}}, {"pads", V{1, 3, 3, 1, 3, 3}}}, true,
       "im2col"},  // r3d_18's stem
      {{1, 8, 2, 2, 4}, {4, 8, 1, 1, 1}, Attributes{}, true, "rows"},  // pointwise, 16 positions: X in place
      {{1, 8, 2, 3, 4}, {4, 8, 1, 1, 1}, Attributes{}, true, "im2col"},  // pointwise, 24: X in place
      {{1, 4, 9, 9}, {4, 1, 3, 3}, a(4, {1, 3}, {1, 1, 1, 1}), true, "depthwise_rows"},  // stride 3 along W
      // Widths that are multiples of 4: rows read as 4-element texels, segments starting
      // 3, 2, 1 and 0 elements into one (pads 1, 2, 5, 0 and 4 along W).
      {{1, 8, 8, 16}, {8, 1, 3, 3}, a(8, {1, 1}, {1, 1, 1, 1}), true, "depthwise_rows"},
      {{2, 6, 12, 12}, {6, 1, 3, 3}, a(6, {2, 2}, {1, 1, 1, 1}), true, "depthwise_rows"},
      {{1, 4, 8, 8}, {4, 1, 5, 5}, a(4, {1, 1}, {2, 2, 2, 2}), false, "depthwise_rows"},
      {{1, 2, 12, 12}, {2, 1, 11, 11}, a(2, {1, 1}, {5, 5, 5, 5}), true, "depthwise_rows"},
      {{1, 4, 8, 8}, {4, 1, 3, 3}, a(4, {1, 1}, {0, 0, 0, 0}), true, "depthwise_rows"},
      {{1, 3, 6, 20}, {6, 1, 3, 3}, a(3, {1, 2}, {4, 4, 4, 4}), true, "depthwise_rows"},  // multiplier 2
      {{1, 5, 8, 8}, {5, 1, 3, 3}, a(5, {1, 1}, {2, 2, 2, 2}, {2, 2}), false, "depthwise_rows"},
      {{1, 4, 4, 4}, {4, 1, 3, 3}, a(4, {1, 1}, {1, 1, 1, 1}), true, "depthwise_rows"},  // OW < 8
      // Blocks of rows (conv.cpp's depthwise_block; enough planes that blocks are taken): 4 rows
      // of 4 outputs (a whole 4x4 map; 3 rows: a block of 2 past the last), 2 rows of 8 for 5x5
      // kernels (odd rows: the last block half out; vertical stride 2), 2 rows of a grouped
      // conv's 2 channels; a 7x7 kernel a row at a time (its weights fetched per tap); outputs
      // stored as 4-element vectors (widths 4 and 8) or not.
      {{1, 512, 4, 4}, {512, 1, 3, 3}, a(512, {1, 1}, {1, 1, 1, 1}), true, "depthwise_rows"},
      {{1, 512, 3, 3}, {512, 1, 3, 3}, a(512, {1, 1}, {1, 1, 1, 1}), false, "depthwise_rows"},
      {{1, 256, 9, 9}, {256, 1, 5, 5}, a(256, {1, 1}, {2, 2, 2, 2}), true, "depthwise_rows"},
      {{1, 128, 7, 8}, {128, 1, 5, 5}, a(128, {1, 1}, {2, 2, 2, 2}), true, "depthwise_rows"},
      {{2, 128, 13, 16}, {128, 1, 5, 5}, a(128, {2, 2}, {2, 2, 2, 2}), false, "depthwise_rows"},
      {{1, 96, 16, 16}, {96, 1, 7, 7}, a(96, {1, 1}, {3, 3, 3, 3}), true, "depthwise_rows"},
      {{1, 256, 4, 4}, {256, 2, 3, 3}, a(128, {1, 1}, {1, 1, 1, 1}), true, "grouped_rows"},
      // A row segment past 32 elements (stride 3, 7 wide, dilation 2: 34): conv_depthwise.comp.
      {{1, 2, 20, 24}, {2, 1, 7, 7}, a(2, {1, 3}, {6, 6, 6, 6}, {2, 2}), true, "depthwise"},
  };
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const ConvCase& c : cases) {
      std::vector<Tensor> in = {random_input(c.x, dt), random_input(c.w, dt)};
      if (c.bias) in.push_back(random_input({c.w[0]}, dt));
      SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
      expect_impl_match("Conv", in, c.attrs, c.impl);
      if (c.impl == "rows") {  // matmul_rows.comp's A fetched per lane too (shared by default)
        SharedRowsOperand per_lane(false);
        expect_impl_match("Conv", in, c.attrs, c.impl);
      }
      const bool depthwise = c.impl.rfind("depthwise", 0) == 0;
      if (c.impl == "depthwise_rows") {
        DisabledKernels rows("vulkan:Conv:depthwise_rows");
        expect_impl_match("Conv", in, c.attrs, "depthwise");
      }
      if (c.impl == "grouped_rows" || c.impl == "rows") {
        DisabledKernels rows("vulkan:Conv:" + c.impl);
        expect_impl_match("Conv", in, c.attrs, "im2col");
      }
      DisabledKernels later(depthwise ? "vulkan:Conv:depthwise_rows,vulkan:Conv:depthwise" : kTexelConvKernels);
      expect_impl_match("Conv", in, c.attrs, depthwise ? "im2col" : "implicit_gemm");
    }
  }
}

// The row kernels read a row of the padding as the nearest row of X, clamped, and select
// zeros in its place (no branch on lavapipe): an Inf or NaN in X's edge rows and columns must
// still reach only the outputs whose windows hold it. Pads past the kernel's reach (windows
// wholly in the padding: those outputs are the bias), blocks of rows and single rows, one and
// several channels per group, rows read as texels and by element.
TEST(VulkanTexelConv, PaddingNeverReadsTheEdgeOfX) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  auto a = [](int64_t group, V strides, V pads) {
    return Attributes{{"group", group}, {"strides", strides}, {"pads", pads}};
  };
  struct Case {
    Shape x, w;
    Attributes attrs;
    std::string impl;
  };
  const std::vector<Case> cases = {
      {{1, 8, 9, 9}, {8, 1, 3, 3}, a(8, {1, 1}, {4, 4, 4, 4}), "depthwise_rows"},
      {{1, 8, 8, 8}, {8, 1, 3, 3}, a(8, {1, 1}, {4, 5, 4, 5}), "depthwise_rows"},       // texels
      {{1, 512, 4, 4}, {512, 1, 3, 3}, a(512, {1, 1}, {3, 3, 3, 3}), "depthwise_rows"},  // blocks of 4 rows
      {{1, 128, 7, 8}, {128, 1, 5, 5}, a(128, {1, 1}, {5, 5, 5, 5}), "depthwise_rows"},  // blocks of 2
      {{1, 12, 6, 6}, {12, 3, 3, 3}, a(4, {2, 2}, {4, 4, 4, 4}), "grouped_rows"},
  };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
    Tensor x = random_input(c.x);
    const int64_t H = c.x[2], W = c.x[3], planes = c.x[0] * c.x[1];
    float* d = x.data<float>();
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j)
          if (i == 0 || j == 0) d[(p * H + i) * W + j] = inf;
          else if (i == H - 1 || j == W - 1) d[(p * H + i) * W + j] = nan;
    expect_impl_match("Conv", {x, random_input(c.w, DType::f32, 0.1, 1), random_input({c.w[0]})}, c.attrs, c.impl);
  }
}

// "winograd" (F(2x2, 3x3): 3x3 kernels, stride 1, dilation 1, group 1, at least 16 input
// and output channels, maps whose tiles save products), f32 and f16, against the float64
// reference and "im2col" on the same call: output sides odd and even (tiles half outside Y),
// widths whose tiles do not fill a group of 4 tiles and widths that are multiples of 4 (vec4
// stores), input channels not a multiple of 4 (zero rows of the transformed input), every
// padding (none, asymmetric, past 1, SAME_UPPER), several images, with and without bias;
// images split over passes under a small binding limit; grids spread over two axes; then the
// calls it declines, with the reason (small maps among them).
TEST(VulkanTexelConv, WinogradMatchesReferenceAndIm2col) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  auto pads = [](V p) { return Attributes{{"pads", p}}; };
  struct WCase {
    Shape x, w;
    Attributes attrs;
    bool bias = true;
  };
  const std::vector<WCase> cases = {
      {{1, 16, 8, 8}, {16, 16, 3, 3}, pads({1, 1, 1, 1})},           // 8 wide: vec4 stores
      {{2, 16, 13, 21}, {24, 16, 3, 3}, pads({1, 1, 1, 1})},         // half tiles, 11 tiles a row
      {{1, 17, 9, 10}, {16, 17, 3, 3}, pads({0, 0, 0, 0}), false},   // 17 channels; 7 x 8, no bias
      {{1, 16, 10, 12}, {20, 16, 3, 3}, pads({0, 1, 2, 1})},         // asymmetric: 10 x 12
      {{1, 18, 6, 9}, {16, 18, 3, 3}, pads({2, 3, 2, 3})},           // pads past 1: 8 x 13
      {{3, 32, 14, 14}, {48, 32, 3, 3}, Attributes{{"auto_pad", std::string("SAME_UPPER")}}},
      {{1, 20, 33, 70}, {16, 20, 3, 3}, pads({1, 1, 1, 1}), false},  // many workgroups
  };

  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const WCase& c : cases) {
      std::vector<Tensor> in = {random_input(c.x, dt), random_input(c.w, dt, -0.5, 0.5)};
      if (c.bias) in.push_back(random_input({c.w[0]}, dt));
      SCOPED_TRACE(str(dtype_name(dt), " ", shape_str(c.x), " * ", shape_str(c.w)));
      expect_impl_match("Conv", in, c.attrs, "winograd");
      DisabledKernels off("vulkan:Conv:winograd");
      expect_impl_match("Conv", in, c.attrs, "im2col");
    }
  }
  // Images in passes: an 8x8 image is 16 tiles, its products take 16 x 24 x 16 x 4 bytes (24576),
  // its transformed input 16 x 16 x 16 x 4; a 50000-byte binding holds 2 of the 5 images (passes
  // of 2, 2 and 1).
  vk::set_binding_limit_override(50000);
  expect_impl_match("Conv", {random_input({5, 16, 8, 8}), random_input({24, 16, 3, 3}), random_input({24})},
                    pads({1, 1, 1, 1}), "winograd");
  vk::set_binding_limit_override(0);
  // Grids spread over two axes (at most 2 workgroups along x): the weights' transform (160
  // invocations, 3 workgroups), the input's (20 channels x 81 quads of tiles), the 16 products
  // and the output's (32 x 81).
  vk::set_group_limit_override(0, 2);
  expect_impl_match("Conv", {random_input({1, 20, 17, 70}), random_input({32, 20, 3, 3}), random_input({32})},
                    pads({1, 1, 1, 1}), "winograd");
  vk::set_group_limit_override(0, 0);
  // Declined, with the reason; "im2col" takes them ("rows", which takes the small maps first,
  // disabled).
  struct Declined {
    Shape x, w;
    Attributes attrs;
    const char* why;
    DType dt = DType::f32;
  };
  const std::vector<Declined> declined = {
      {{1, 16, 8, 8}, {16, 16, 3, 3}, Attributes{{"strides", V{2, 2}}}, "strides 2x2"},
      {{1, 16, 8, 8}, {16, 16, 3, 3}, Attributes{{"dilations", V{2, 2}}}, "dilations 2x2"},
      {{1, 16, 8, 8}, {16, 16, 5, 5}, Attributes{}, "kernel 5x5"},
      {{1, 32, 8, 8}, {16, 16, 3, 3}, Attributes{{"group", int64_t{2}}}, "grouped"},
      {{1, 15, 8, 8}, {16, 15, 3, 3}, Attributes{}, "15 -> 16 channels"},
      {{1, 16, 8, 8}, {8, 16, 3, 3}, Attributes{}, "16 -> 8 channels"},
      {{1, 16, 8, 8, 8}, {16, 16, 3, 3, 3}, Attributes{}, "not a 2-D convolution"},
      {{1, 16, 4, 3}, {17, 16, 3, 3}, Attributes{}, "an output of 2 x 1"},    // 64 products for 18
      {{1, 16, 3, 40}, {16, 16, 3, 3}, Attributes{}, "an output of 1 x 38"},  // 320 for 342
      {{1, 16, 4, 4}, {16, 16, 3, 3}, pads({1, 1, 1, 1}), "an output of 4 x 4"},  // 128 for 144
  };
  DisabledKernels no_rows("vulkan:Conv:rows");
  for (const Declined& d : declined) {
    if (d.dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    SCOPED_TRACE(d.why);
    expect_impl_match("Conv", {random_input(d.x, d.dt), random_input(d.w, d.dt)}, d.attrs, "im2col", d.why);
  }
}

// The texel Conv kernels find their indices with common.glsl's div21 (a float division and two
// corrections) while every index is below 2^21, and with integer division past that: calls
// just under and just over the bound through "depthwise" (N x OC x OH x ceil(OW / 4)
// invocations), "depthwise_rows" and "im2col" (4 x the columns' vec4s), against the float64 reference.
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
    DisabledKernels rows("vulkan:Conv:depthwise_rows");
    expect_impl_match("Conv", {random_input(x), random_input({64, 1, 3, 3}), random_input({64})}, a(64), "depthwise");
  }
  // depthwise_rows (N x OC x OH x ceil(OW / 8) invocations), 16 channels times 8: 128 x 128 x
  // 127 = 2080768 (< 2^21), then 128 x 128 x 128 = 2097152.
  for (const Shape& x : std::vector<Shape>{{1, 16, 128, 1016}, {1, 16, 128, 1024}}) {
    SCOPED_TRACE(shape_str(x));
    expect_impl_match("Conv", {random_input(x), random_input({128, 1, 3, 3}), random_input({128})},
                      Attributes{{"group", int64_t{16}}, {"pads", V{1, 1, 1, 1}}}, "depthwise_rows");
  }
  // im2col by 4 positions (output rows 2 wide): K = 288 rows of P positions: 288 x 7200 =
  // 2073600 (< 2^21), 288 x 7396 = 2130048.
  for (const Shape& x : std::vector<Shape>{{1, 32, 3600, 2}, {1, 32, 3698, 2}}) {
    SCOPED_TRACE(shape_str(x));
    expect_impl_match("Conv", {random_input(x), random_input({8, 32, 3, 3}), random_input({8})}, a(1), "im2col");
  }
  // im2col by output rows (an invocation per (k, output row)), rows 8 wide (whole vec4s) and 7
  // wide (vec4s running into the next row): K = 9216 rows x 200 = 1843200 (< 2^21) and x 256 =
  // 2359296 output rows.
  for (const Shape& x : std::vector<Shape>{{1, 1024, 200, 8}, {1, 1024, 256, 8}, {1, 1024, 200, 7}, {1, 1024, 256, 7}}) {
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
  const std::string no_texel = kTexelConvKernels;
  const std::vector<Impl> impls = {
      {"grouped_rows", "", {1, 6, 7, 7}, {6, 3, 3, 3}, a(2, {1, 0, 1, 0})},
      {"rows", "", {2, 16, 1, 1}, {8, 16, 1, 1}, a(1, {0, 0, 0, 0})},  // one output per image
      {"rows", "", {1, 16, 2, 2}, {8, 16, 1, 1}, a(1, {0, 0, 0, 0})},  // pointwise over 2x2: X in place
      {"rows", "", {2, 6, 3, 4}, {9, 6, 3, 3}, a(1, {1, 1, 1, 1})},    // 12 positions, 2 chunks: columns
      {"rows", "", {2, 24, 4, 4}, {33, 24, 1, 1}, a(1, {0, 0, 0, 0})},  // 16 positions by vectors, 33 outputs
      {"depthwise_rows", "", {1, 8, 9, 9}, {8, 1, 3, 3}, a(8, {1, 1, 1, 1})},
      {"depthwise_rows", "", {1, 8, 6, 8}, {8, 1, 3, 3}, a(8, {1, 1, 1, 1})},  // rows as 4-element texels
      {"depthwise_rows", "", {1, 512, 4, 4}, {512, 1, 3, 3}, a(512, {1, 1, 1, 1})},  // blocks of 4 rows
      {"depthwise_rows", "", {1, 128, 7, 8}, {128, 1, 5, 5}, a(128, {2, 2, 2, 2})},  // blocks of 2, half out
      {"depthwise", "vulkan:Conv:depthwise_rows", {1, 8, 9, 9}, {8, 1, 3, 3}, a(8, {1, 1, 1, 1})},
      {"im2col", "", {2, 8, 6, 6}, {12, 8, 1, 1}, a(1, {0, 0, 0, 0})},  // pointwise, X in place
      {"im2col", "", {2, 8, 5, 5}, {12, 8, 1, 1}, a(1, {0, 0, 0, 0})},  // pointwise, X in place by element
      {"im2col", "", {1, 6, 7, 7}, {5, 6, 3, 3}, a(1, {1, 1, 1, 1})},   // columns
      {"winograd", "", {1, 16, 7, 8}, {16, 16, 3, 3}, a(1, {1, 1, 1, 1})},  // vec4 stores
      {"winograd", "", {1, 16, 7, 7}, {16, 16, 3, 3}, a(1, {1, 1, 1, 1})},  // element stores
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
      const bool all = dt == DType::f32 && (impl.name == "im2col" || impl.name == "winograd") && impl.w[2] == 3;
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

// LSTM and GRU (kernels/vulkan/rnn.cpp): "persistent" (one texel GEMM for the input
// projections, then the steps in one workgroup per sequence, as many per dispatch as the loop
// cap allows) and "steps" (one dispatch per time step) against the float64 reference and
// "sequence" (rnn.comp), every output (Y, Y_h, Y_c) poisoned before the call: both directions
// and bidirectional, both layouts, sequence lengths shorter than the sequence (and 0), initial
// states, peepholes, clip, no bias, batches of 1, 3 and 5, hidden sizes whose quads of units do
// not fill the last workgroup of "steps"; "persistent" with its steps split over dispatches (a
// loop cap of one, two and three steps a dispatch); and the calls each declines, with the reason.
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
      // Units in quads over workgroups of 16 invocations: 5 x 17 quads, 2 x 3 x 9.
      {"GRU", "forward", 0, 3, 5, 8, 68, true, false, true},
      {"LSTM", "bidirectional", 0, 3, 3, 4, 36, true, true, true, true},
      // One sequence (zoo's language models: batch 1), the last step a sequence of its own.
      {"GRU", "forward", 1, 9, 1, 8, 24, true, false, true},
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
    // "persistent" also under loop caps that fit one, two and three steps a dispatch.
    const uint64_t step_loops = static_cast<uint64_t>(c.hidden / 4 + 1) * (5 + 4 * (gates + 1)) + 4 * (2 * gates + 3) + 19;
    const std::string off_persistent = str("vulkan:", c.op, ":persistent");
    for (const auto& [impl, disabled, cap] :
         {std::tuple{"persistent", std::string(), uint64_t{0}}, {"persistent", std::string(), 8 + step_loops},
          {"persistent", std::string(), 8 + 2 * step_loops}, {"persistent", std::string(), 8 + 3 * step_loops},
          {"steps", off_persistent, uint64_t{0}},
          {"sequence", off_persistent + str(",vulkan:", c.op, ":steps"), uint64_t{0}}}) {
      SCOPED_TRACE(str(impl, cap ? str(", loop cap ", cap) : ""));
      DisabledKernels only(disabled);
      std::unique_ptr<LoopCapOverride> loop_cap = cap ? std::make_unique<LoopCapOverride>(cap) : nullptr;
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
  // Large steps (4 x 256 x 256 multiply-adds a sequence) stay spread over the device.
  Resolution big = resolve_vk("LSTM",
                              to_vk({random_input({3, 2, 8}), random_input({1, 4 * 256, 8}), random_input({1, 4 * 256, 256})}),
                              Attributes{{"hidden_size", int64_t{256}}});
  EXPECT_EQ(big.kernel ? big.kernel->impl.name : "", "steps");
  EXPECT_NE(big.reason.find("a workgroup runs them on one thread"), std::string::npos) << big.reason;
}

}  // namespace
}  // namespace porta::test
