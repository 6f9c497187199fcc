// The compute kernels under a driver's cap on loop iterations per invocation (Mesa's lavapipe
// shares 65535 back-edges between all loops of an invocation and then leaves every loop
// silently). Each kernel counts its loops (matmul_loops, conv_gemm_loops, sdpa_loops, ...):
// MatMul/Gemm and the implicit-GEMM Conv split K over dispatches, attention splits the key
// sequence, the global pools reduce long planes in chunks, and the per-element kernels (pools,
// direct Conv, ConvTranspose) decline what would not fit. A test-forced tiny cap
// (vk::set_loop_limit_override) runs the split and decline paths with small shapes; a few cases
// run at the device's real cap with sizes the unsplit shaders could not finish.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

Tensor random_input(const Shape& shape, double lo = -1, double hi = 1) {
  InputSpec s;
  s.shape = shape;
  s.lo = lo;
  s.hi = hi;
  return make_input(s, DType::f32);
}

// Resolution of one concrete call on vulkan:0 (attributes completed with their defaults).
Resolution resolve_on_vulkan(const char* name, const std::vector<Tensor>& host, const Attributes& given = {}) {
  return resolve_vk(name, to_vk(host), given, DType::f32);
}

// Runs the call on vulkan:0 and compares with the float64 reference.
void expect_matches_reference(const char* name, const std::vector<Tensor>& host, const Attributes& attrs = {},
                              double tolerance = 0) {
  std::vector<Tensor> dev;
  for (const Tensor& t : host) dev.push_back(t.defined() ? t.to(kVk) : Tensor());
  std::vector<Tensor> ref = reference_op(name, host, attrs, 1);
  std::vector<Tensor> got = call_op(name, dev, attrs, 1);
  ASSERT_EQ(got.size(), 1u);
  Comparison cmp = compare(got[0], ref[0], tolerance > 0 ? tolerance : default_tolerance(DType::f32));
  EXPECT_TRUE(cmp.ok) << name << ": " << cmp.message;
}


void expect_declined(const Resolution& r, const char* what) {
  EXPECT_NE(r.path, Path::native) << what;
  EXPECT_NE(r.reason.find("loop iterations"), std::string::npos) << what << ": " << r.reason;
}

// matmul.comp counts 51 + 585 per K tile of 16: a cap of 1221 allows two tiles (K = 32) per
// dispatch, so every case with K > 32 sums over several dispatches through the fp32 scratch
// (batched, broadcast, transposed, with alpha, beta and C on the last one only).
// The split is the "tiled" kernel's: "texel" (CPU-like devices) is disabled here
// (tests/vulkan_gemm_variants_test.cpp covers it under a loop cap).
TEST(VulkanLoopCap, MatMulAndGemmSplitKMatchReference) {
  REQUIRE_VULKAN();
  DisabledKernels tiled_only(kTexelGemmKernels);
  LoopCapOverride cap(1221);
  EXPECT_EQ(resolve_on_vulkan("MatMul", {random_input({5, 100}), random_input({100, 6})}).path, Path::native);
  EXPECT_GT(check_cases({"MatMul", "Gemm"}), 20);
  expect_matches_reference("MatMul", {random_input({70, 161}), random_input({161, 67})});  // 6 dispatches, 2x2 tiles of Y
  expect_matches_reference("MatMul", {random_input({2, 1, 3, 49}), random_input({3, 49, 4})});
  expect_matches_reference("MatMul", {random_input({33}), random_input({33})});  // K = 33: 3 slices, the last of 1
  expect_matches_reference("Gemm", {random_input({97, 5}), random_input({7, 97}), random_input({5, 1})},
                           {{"transA", int64_t{1}}, {"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", -2.0}});
}

TEST(VulkanLoopCap, MatMulDeclinesWhenOneKTileDoesNotFit) {
  REQUIRE_VULKAN();
  DisabledKernels tiled_only(kTexelGemmKernels);  // "texel" needs K/4 + 61
  LoopCapOverride cap(600);  // below one K tile (636)
  expect_declined(resolve_on_vulkan("MatMul", {random_input({4, 8}), random_input({8, 3})}), "MatMul");
  expect_declined(resolve_on_vulkan("Gemm", {random_input({4, 8}), random_input({8, 3})}), "Gemm");
  EXPECT_GT(check_cases({"MatMul"}), 10);  // the CPU then runs them
}

// conv_gemm.comp counts 55 + 617 per K tile (K = C_in/group x taps): a cap of 1289 allows two
// tiles per dispatch. The conformance cases with K > 32 (3-D, strided 3x2 over 3 channels...)
// and the larger ones below split; the direct kernel's cases under the same cap still fit.
TEST(VulkanLoopCap, ConvImplicitGemmSplitKMatchesReference) {
  REQUIRE_VULKAN();
  // The split is the implicit GEMM's.
  DisabledKernels no_im2col(kTexelConvKernels);
  LoopCapOverride cap(1289);
  Tensor x = random_input({2, 24, 6, 5}), w = random_input({10, 12, 3, 3}), b = random_input({10});
  Attributes grouped{{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  EXPECT_EQ(resolve_on_vulkan("Conv", {x, w, b}, grouped).path, Path::native);
  expect_matches_reference("Conv", {x, w, b}, grouped);  // K = 108: 4 dispatches per group
  expect_matches_reference("Conv", {random_input({1, 40, 7, 7}), random_input({70, 40, 3, 3}), Tensor()},
                           {{"strides", std::vector<int64_t>{2, 2}}});  // K = 360: 12 dispatches
  expect_matches_reference("Conv", {random_input({1, 5, 6, 5, 4}), random_input({3, 5, 3, 3, 2}), random_input({3})});
  EXPECT_GT(check_cases({"Conv"}), 10);
}

// The direct kernels (ConvTranspose; Conv with the GEMM turned off) and MaxPool/AveragePool run
// one output element per invocation and decline a window that does not fit, with the reason.
TEST(VulkanLoopCap, PerElementWindowKernelsDeclinePastTheCap) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(400);
  // 2-D pooling: 10 + 10 per tap + (kernel + 1) per axis, so 3x3 (108) fits and 7x7 (516) does not.
  Tensor x = random_input({1, 2, 12, 12});
  Attributes small{{"kernel_shape", std::vector<int64_t>{3, 3}}}, large{{"kernel_shape", std::vector<int64_t>{7, 7}}};
  // The per-element kernel's counts ("taps"); pool_window.comp's below.
  DisabledKernels taps_only("vulkan:MaxPool:window,vulkan:AveragePool:window");
  for (const char* op : {"MaxPool", "AveragePool"}) {
    EXPECT_EQ(resolve_on_vulkan(op, {x}, small).path, Path::native) << op;
    expect_declined(resolve_on_vulkan(op, {x}, large), op);
    expect_matches_reference(op, {x}, large);  // by the fallback
  }
  EXPECT_GT(check_cases({"MaxPool", "AveragePool"}), 10);
  // ConvTranspose: 3x3 taps x 40 channels needs 2*3 + 10 + 9*(6 + 41) = 439.
  Tensor ct_x = random_input({1, 40, 4, 4}), ct_w = random_input({40, 2, 3, 3});
  expect_declined(resolve_on_vulkan("ConvTranspose", {ct_x, ct_w}), "ConvTranspose");
  expect_matches_reference("ConvTranspose", {ct_x, ct_w});
  EXPECT_EQ(resolve_on_vulkan("ConvTranspose", {random_input({1, 20, 4, 4}), random_input({20, 2, 3, 3})}).path,
            Path::native);
  DisabledKernels no_gemm(std::string(kTexelConvKernels) + ",vulkan:Conv:implicit_gemm");
  expect_declined(resolve_on_vulkan("Conv", {ct_x, random_input({3, 40, 3, 3})}), "direct Conv");
  EXPECT_GT(check_cases({"Conv", "ConvTranspose"}), 10);
  // pool_window.comp (CPU-like devices) counts 8 + 7*8 + 49*5 + 8 + 5 + 4*8 + 5 = 359 for 7x7:
  // it takes that window under a cap of 400 and declines it under 300.
  if (vk::context(0).caps().type != "cpu") return;
  {
    DisabledKernels none("");
    for (const char* op : {"MaxPool", "AveragePool"}) EXPECT_EQ(resolve_on_vulkan(op, {x}, large).path, Path::native) << op;
  }
  LoopCapOverride tighter(300);
  DisabledKernels none("");
  for (const char* op : {"MaxPool", "AveragePool"}) expect_declined(resolve_on_vulkan(op, {x}, large), op);
}

// reduce.comp for the global pools: chunk/256 + 1 + 520 per invocation. A cap of 560 reduces
// chunks of 9984 elements, so a 100x120 plane takes two passes (chunk partials, then the row);
// below 522 not even 256 elements fit and the kernel declines. The split is the workgroup
// kernel's: "rows" (CPU-like devices, tests/vulkan_texel_variants_test.cpp) is disabled here.
TEST(VulkanLoopCap, GlobalPoolsSplitLongPlanes) {
  REQUIRE_VULKAN();
  DisabledKernels workgroups_only("vulkan:GlobalAveragePool:rows,vulkan:GlobalMaxPool:rows");
  {
    LoopCapOverride cap(560);
    Tensor fits = random_input({1, 3, 64, 64}), split = random_input({2, 3, 100, 120});
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
      EXPECT_EQ(resolve_on_vulkan(op, {fits}).path, Path::native) << op;
      EXPECT_EQ(resolve_on_vulkan(op, {split}).path, Path::native) << op;
      expect_matches_reference(op, {fits});
      expect_matches_reference(op, {split});
    }
    // A NaN in the second chunk of plane 1 reaches GlobalMaxPool's result through the partials.
    std::vector<double> v = split.to_doubles();
    v[1 * 12000 + 11000] = NAN;
    Tensor with_nan = Tensor::from_values(v, split.shape(), DType::f32);
    std::vector<double> got = call_op("GlobalMaxPool", {with_nan.to(kVk)}).at(0).to(Device::cpu()).to_doubles();
    ASSERT_EQ(got.size(), 6u);
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(std::isnan(got[i]), i == 1) << i << ": " << got[i];
    EXPECT_GT(check_cases({"GlobalAveragePool", "GlobalMaxPool"}), 3);
  }
  LoopCapOverride cap(500);
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    Tensor x = random_input({1, 2, 10, 10});
    expect_declined(resolve_on_vulkan(op, {x}), op);
    expect_matches_reference(op, {x});
  }
}

// sdpa_loops: ceil16(D) + 21 once, D + ceil16(D) + ceil16(Dv) + 213 per tile of 16 keys. A cap
// of 500 walks two key tiles per dispatch at D = 8 or 16 and one at D = 24 and up, so every
// conformance case past 16 keys carries the running max, sum and accumulators between
// dispatches (causal rows that end early, masks, Dv != D, D = 128).
TEST(VulkanLoopCap, AttentionSplitsTheKeySequence) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(500);
  Tensor q = random_input({1, 2, 20, 16}), k = random_input({1, 2, 100, 16}), v = random_input({1, 2, 100, 24});
  EXPECT_EQ(resolve_on_vulkan("ScaledDotProductAttention", {q, k, v}).path, Path::native);
  expect_matches_reference("ScaledDotProductAttention", {q, k, v});
  expect_matches_reference("ScaledDotProductAttention", {q, k, v}, {{"causal", int64_t{1}}});
  EXPECT_GT(check_cases({"ScaledDotProductAttention"}), 8);
}

TEST(VulkanLoopCap, AttentionDeclinesWhenOneKeyTileDoesNotFit) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(300);  // D = 128: 29 + 357
  Tensor q = random_input({1, 1, 4, 128}), k = random_input({1, 1, 40, 128});
  expect_declined(resolve_on_vulkan("ScaledDotProductAttention", {q, k, k}), "ScaledDotProductAttention");
  expect_matches_reference("ScaledDotProductAttention", {q, k, k});  // by the composite
}

// At the device's own cap (65535 on lavapipe; kernels plan for 57344): sizes whose unsplit
// dispatch lavapipe ends early. Measured there with the splitting turned off (a huge forced
// cap): MatMul with K = 2^18 (16384 K tiles) summed only the first 2/3 of K (relative error
// 0.33: about 6 counted iterations per tile, the constant loops unrolled; 2^17 still passed),
// so K = 3 * 2^16 (12288 tiles) stops near 89%; Conv with 8192 channels x 3x3 (K = 73728) gave
// 0.90 (4096 channels passed), attention over 16384 keys (D = 64) 0.41 (4096 passed). Split by
// the kernels' own (conservative) counts these run 127, 51 and 6 dispatches; Gemm with K = 5000
// splits in 4 although its single dispatch would still fit lavapipe's real count.
TEST(VulkanLoopCap, MatMulAndGemmAtTheRealCapMatchReference) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(0);
  // Sums of 196608 products in fp32: values in [0.5, 1] keep the relative error small and stable.
  Tensor a = random_input({2, 3 << 16}, 0.5, 1), b = random_input({3 << 16, 3}, 0.5, 1);
  EXPECT_EQ(resolve_on_vulkan("MatMul", {a, b}).path, Path::native);
  expect_matches_reference("MatMul", {a, b}, {}, 1e-4);
  expect_matches_reference("Gemm", {random_input({4, 5000}), random_input({6, 5000}), random_input({6})},
                           {{"transB", int64_t{1}}});
}

TEST(VulkanLoopCap, ConvAtTheRealCapMatchesReference) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(0);
  Tensor x = random_input({1, 8192, 4, 4}), w = random_input({4, 8192, 3, 3}), bias = random_input({4});
  Attributes pads{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  EXPECT_EQ(resolve_on_vulkan("Conv", {x, w, bias}, pads).path, Path::native);
  expect_matches_reference("Conv", {x, w, bias}, pads, 1e-4);
}

TEST(VulkanLoopCap, AttentionAtTheRealCapMatchesReference) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(0);
  Tensor q = random_input({1, 1, 16, 64}), k = random_input({1, 1, 16384, 64}), v = random_input({1, 1, 16384, 64});
  EXPECT_EQ(resolve_on_vulkan("ScaledDotProductAttention", {q, k, v}).path, Path::native);
  expect_matches_reference("ScaledDotProductAttention", {q, k, v});
}

}  // namespace
}  // namespace porta::test
