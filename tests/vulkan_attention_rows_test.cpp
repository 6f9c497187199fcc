// The attention kernel of CPU-like Vulkan devices (kernels/vulkan/sdpa_rows.comp, "rows": one
// invocation per query row, a streaming softmax over the keys, no shared memory): against the
// float64 reference and the workgroup kernel GPUs keep, on the same calls, with NaN-poisoned
// outputs; what it declines (head sizes not multiples of 4, no keys, rows past the loop cap)
// goes to the workgroup kernel; grids past 65535 workgroups.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/vulkan_texel_test_util.hpp"

namespace porta::test {
namespace {

constexpr const char* kOp = "ScaledDotProductAttention";

// Every f32 case of the op's own list (masks of every broadcast, causal, all-hidden rows, D != Dv,
// heads of 128) by the rows kernel where it takes the call, then again by the workgroup kernel.
TEST(VulkanAttentionRows, EveryCaseMatchesWithEitherKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  EXPECT_GT(check_cases({kOp}), 8);
  DisabledKernels workgroup_only("vulkan:ScaledDotProductAttention:rows");
  EXPECT_GT(check_cases({kOp}), 8);
}

TEST(VulkanAttentionRows, ShapesAroundTheVectorsAndTheKeys) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  struct Case {
    Shape q, k, v;
  };
  // One query, one key, odd query and key counts, D != Dv, the largest head (128), many heads.
  const std::vector<Case> cases = {
      {{1, 1, 1, 4}, {1, 1, 1, 4}, {1, 1, 1, 4}},         {{2, 3, 17, 8}, {2, 3, 33, 8}, {2, 3, 33, 12}},
      {{1, 2, 5, 128}, {1, 2, 7, 128}, {1, 2, 7, 128}},   {{1, 12, 17, 64}, {1, 12, 17, 64}, {1, 12, 17, 64}},
      {{3, 1, 65, 16}, {3, 1, 1, 16}, {3, 1, 1, 4}},
  };
  for (const Case& c : cases) {
    Tensor q = random_input(c.q), k = random_input(c.k), v = random_input(c.v);
    for (int64_t causal : {0, 1}) {
      Attributes a{{"causal", causal}};
      expect_impl_match(kOp, {q, k, v}, a, "rows");
      // An additive mask broadcast over batch and heads, with hidden keys (-inf) in every row
      // but one key per row; and a full [B, H, Sq, Skv] mask.
      Tensor mask = random_input({c.q[2], c.k[2]});
      float* m = mask.data<float>();
      for (int64_t i = 0; i < c.q[2]; ++i)
        for (int64_t j = 0; j < c.k[2]; ++j)
          if ((i + j) % 3 == 1 && j != i % c.k[2]) m[i * c.k[2] + j] = -std::numeric_limits<float>::infinity();
      expect_impl_match(kOp, {q, k, v, mask}, a, "rows");
      expect_impl_match(kOp, {q, k, v, random_input({c.q[0], c.q[1], c.q[2], c.k[2]})}, a, "rows");
      DisabledKernels workgroup_only("vulkan:ScaledDotProductAttention:rows");
      expect_impl_match(kOp, {q, k, v, mask}, a, "");
    }
  }
  // A scale of its own.
  Tensor q = random_input({1, 2, 9, 16}), k = random_input({1, 2, 11, 16}), v = random_input({1, 2, 11, 16});
  expect_impl_match(kOp, {q, k, v}, {{"scale", 0.37}}, "rows");
}

// Q, K and V as strided views of one packed projection [S, B, lead + 3E] (the head splits a
// session hands the kernel in place, Compiler::read_chains_in_place): read where they lie when
// each starts on a texel (KernelDef::reads_view says so), copied first when not; a transposed
// mask view is copied. Each against the float64 reference of the views' values, with poisoned
// outputs.
TEST(VulkanAttentionRows, StridedViewsOfAPackedProjection) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  struct Case {
    int64_t s, b, h, dh, lead, tail;  // columns before q and after v
    bool in_place;
  };
  // Strides of whole texels but splits between them (lead 2, tail 2); strides between texels.
  for (const Case& c : {Case{5, 2, 3, 4, 0, 0, true}, Case{17, 3, 2, 8, 4, 0, true}, Case{1, 1, 1, 4, 0, 0, true},
                        Case{9, 2, 4, 16, 8, 4, true}, Case{5, 2, 3, 4, 2, 2, false}, Case{5, 2, 3, 4, 2, 0, false},
                        Case{6, 2, 2, 8, 1, 0, false}}) {
    SCOPED_TRACE(str("S ", c.s, " B ", c.b, " H ", c.h, " Dh ", c.dh, " lead ", c.lead, " tail ", c.tail, ", seed ",
                     seed()));
    const int64_t e = c.h * c.dh, width = c.lead + 3 * e + c.tail;
    Tensor packed = random_input({c.s, c.b, width});
    Tensor dev = packed.to(kVk);
    const Shape shape{c.b, c.h, c.s, c.dh};
    const std::vector<int64_t> strides{width, c.dh, c.b * width, 1};
    std::vector<Tensor> host, views;
    for (int64_t part = 0; part < 3; ++part) {
      const int64_t offset = c.lead + part * e;
      host.push_back(packed.as_strided(shape, strides, offset).contiguous());
      views.push_back(dev.as_strided(shape, strides, dev.offset() + offset));
    }
    for (bool masked : {false, true}) {
      std::vector<Tensor> h = host, v = views;
      if (masked) {
        Tensor mask = random_input({c.s, c.s});
        h.push_back(mask.as_strided({c.s, c.s}, {1, c.s}, 0).contiguous());
        Tensor m = mask.to(kVk);
        v.push_back(m.as_strided({c.s, c.s}, {1, c.s}, m.offset()));
      }
      Resolution r = resolve_vk(kOp, v, {});
      ASSERT_NE(r.kernel, nullptr);
      ASSERT_EQ(r.kernel->impl.name, "rows") << r.reason;
      ASSERT_TRUE(r.kernel->strided_inputs && r.kernel->reads_view);
      KernelContext probe;
      probe.op = find_op("ai.porta", kOp);
      probe.device = kVk;
      probe.inputs = v;
      for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r.kernel->reads_view(probe, i), c.in_place) << "input " << i;
      if (masked) EXPECT_FALSE(r.kernel->reads_view(probe, 3));
      const std::vector<Tensor> ref = reference_op(kOp, h, {}, 1);
      std::vector<Tensor> got;
      {
        Poisoned poison;
        got = call_op(kOp, v, {}, 1);
      }
      Comparison cmp = compare(got.at(0), ref.at(0), 1e-5);
      EXPECT_TRUE(cmp.ok) << (masked ? "masked: " : "") << cmp.message;
    }
  }
}

// Y written through a strided view (a session's head merge, Compiler::write_chains_in_place):
// [B, H, S, Dv] into a poisoned [S, lead + B*H*Dv + tail] buffer, where it lies when the
// view starts on the storage alignment (KernelDef::writes_view), through a contiguous result
// when not; every element of the view against the float64 reference, the rest untouched.
TEST(VulkanAttentionRows, WritesThroughAStridedView) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  const OpSchema* op = find_op("ai.porta", kOp);
  struct Case {
    int64_t b, h, s, dv, lead, tail;  // columns before and after the merged heads
    bool in_place;
  };
  // Rows of whole vec4s starting between them (lead 2, tail 2); rows between vec4s (lead 1).
  for (const Case& c : {Case{2, 3, 5, 4, 0, 0, true}, Case{1, 4, 9, 8, 4, 4, true}, Case{3, 2, 7, 16, 0, 0, true},
                        Case{2, 3, 5, 4, 2, 2, false}, Case{2, 3, 5, 4, 1, 0, false}}) {
    SCOPED_TRACE(str("B ", c.b, " H ", c.h, " S ", c.s, " Dv ", c.dv, " lead ", c.lead, " tail ", c.tail, ", seed ",
                     seed()));
    Tensor q = random_input({c.b, c.h, c.s, c.dv}), k = random_input({c.b, c.h, c.s + 2, c.dv}),
           v = random_input({c.b, c.h, c.s + 2, c.dv});
    const Tensor ref = reference_op(kOp, {q, k, v}, {}, 1).at(0);
    const int64_t width = c.lead + c.b * c.h * c.dv + c.tail;
    std::vector<double> nan(static_cast<size_t>(c.s * width), std::numeric_limits<double>::quiet_NaN());
    Tensor merged = Tensor::from_values(nan, {c.s, width}, DType::f32).to(kVk);
    Tensor y = merged.as_strided({c.b, c.h, c.s, c.dv}, {c.h * c.dv, c.dv, width, 1}, merged.offset() + c.lead);
    KernelContext ctx;
    ctx.op = op;
    Attributes attrs{{"causal", int64_t{0}}};
    ctx.attrs = &attrs;
    ctx.device = kVk;
    ctx.inputs = to_vk({q, k, v});
    ctx.outputs = {y};
    Resolution r = resolve_vk(kOp, ctx.inputs, attrs);
    ASSERT_EQ(r.kernel->impl.name, "rows") << r.reason;
    ASSERT_TRUE(r.kernel->writes_view);
    EXPECT_EQ(r.kernel->writes_view(ctx, 0), c.in_place);
    ctx.backend = &backend_for(kVk);
    r.kernel->fn(ctx);
    Tensor got = merged.to(Device::cpu());
    const float* g = got.data<float>();
    const double* want = ref.data<double>();
    int64_t wrong = 0, touched = 0;
    for (int64_t t = 0; t < c.s; ++t)
      for (int64_t col = 0; col < width; ++col) {
        const float x = g[t * width + col];
        if (col < c.lead || col >= width - c.tail) {
          touched += !std::isnan(x);
          continue;
        }
        const int64_t bh = (col - c.lead) / c.dv, d = (col - c.lead) % c.dv;
        const double w = want[(bh * c.s + t) * c.dv + d];
        wrong += !(std::abs(x - w) <= 1e-5 * (1 + std::abs(w)));
      }
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(touched, 0);
  }
}

// A row every key is hidden from gives NaN (as softmax does), the other rows their values.
TEST(VulkanAttentionRows, RowWithEveryKeyHiddenIsNaN) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  Tensor q = random_input({1, 1, 3, 4}), k = random_input({1, 1, 5, 4}), v = random_input({1, 1, 5, 4});
  Tensor mask = Tensor::zeros({3, 5}, DType::f32);
  for (int64_t j = 0; j < 5; ++j) mask.data<float>()[5 + j] = -std::numeric_limits<float>::infinity();
  ASSERT_EQ(resolve_vk(kOp, to_vk({q, k, v, mask})).kernel->impl.name, "rows");
  Tensor y = call_op(kOp, to_vk({q, k, v, mask}), {}, 1).at(0).to(Device::cpu());
  Tensor ref = reference_op(kOp, {q, k, v, mask}, {}, 1).at(0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t t = 0; t < 4; ++t) {
      const float got = y.data<float>()[i * 4 + t];
      if (i == 1) {
        EXPECT_TRUE(std::isnan(got)) << t;
      } else {
        EXPECT_NEAR(got, ref.data<double>()[i * 4 + t], 1e-5) << i << "," << t;
      }
    }
}

// What the rows kernel leaves to the workgroup kernel, with the reason.
TEST(VulkanAttentionRows, DeclinesWhatItCannotRead) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  // Head sizes that are not whole vec4 texels.
  Tensor q = random_input({1, 2, 6, 6}), k = random_input({1, 2, 9, 6}), v = random_input({1, 2, 9, 5});
  expect_impl_match(kOp, {q, k, v}, {}, "", "multiples of 4");
  // No keys: the empty weighted sums are zeros.
  expect_impl_match(kOp, {random_input({1, 1, 3, 4}), random_input({1, 1, 0, 4}), random_input({1, 1, 0, 4})}, {},
                    "", "no keys");
  // Rows whose key loop would pass the driver's cap on loop iterations: 100 keys at D = 16,
  // Dv = 24 count 2020 iterations, more than a forced cap of 1000.
  LoopCapOverride cap(1000);
  expect_impl_match(kOp, {random_input({1, 2, 7, 16}), random_input({1, 2, 100, 16}), random_input({1, 2, 100, 24})},
                    {}, "", "loop iterations");
  expect_impl_match(kOp, {random_input({1, 2, 7, 16}), random_input({1, 2, 40, 16}), random_input({1, 2, 40, 24})},
                    {}, "rows");
}

// More query rows than 64 x 65535 (one workgroup dimension): the grid's second dimension.
TEST(VulkanAttentionRows, MoreRowsThanOneGridDimension) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  const int64_t rows = 64 * 65535 + 77;
  Tensor q = random_input({1, 1, rows, 4}), k = random_input({1, 1, 3, 4}), v = random_input({1, 1, 3, 4});
  expect_impl_match(kOp, {q, k, v}, {}, "rows");
}

}  // namespace
}  // namespace porta::test
