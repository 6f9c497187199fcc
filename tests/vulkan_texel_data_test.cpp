// Kernels for CPU-like Vulkan devices (lavapipe) other than the GEMM, Conv and RNN ones
// (tests/vulkan_texel_variants_test.cpp): elementwise ops, BatchNormalization, Softmax,
// LayerNormalization, pools, reductions, Gelu and the data-movement kernels (copies, Concat,
// Gather), each against the float64 reference and the implementation GPUs keep, on the same
// calls, with NaN-poisoned outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"
#include "tests/vulkan_texel_test_util.hpp"

namespace porta::test {
namespace {

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
  // One element of one operand per block of the other's trailing axes (squeeze-excite's
  // per-channel scale), either side, the small one with fewer axes, blocks of 4 to 12 texels.
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    Tensor maps = random_input({2, 3, 4, 4}, dt), scale = random_input({2, 3, 1, 1}, dt, 0.5, 2);
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
      expect_impl_match(op, {maps, scale}, {}, "texel");
      expect_impl_match(op, {random_input({1, 5, 1, 1}, dt), random_input({1, 5, 3, 4}, dt, 0.5, 2)}, {}, "texel");
      expect_impl_match(op, {random_input({1, 7, 2, 6}, dt), random_input({7, 1, 1}, dt, 0.5, 2)}, {}, "texel");
      expect_impl_match(op, {random_input({3, 2, 4, 3, 4}, dt), random_input({3, 2, 1, 1, 1}, dt, 0.5, 2)}, {},
                        "texel");
    }
  }
  // Operands that broadcast otherwise go to the plain kernel, which says why "texel" declined.
  expect_impl_match("Mul", {random_input({1, 8, 3, 3}), random_input({1, 8, 1, 1})}, {}, "", "the operands broadcast");
  expect_impl_match("Add", {random_input({3, 5}), random_input({5})}, {}, "", "the operands broadcast");
  expect_impl_match("Add", {random_input({4, 3, 8}), random_input({3, 1})}, {}, "", "the operands broadcast");
  expect_impl_match("Mul", {random_input({2, 8, 4, 4}), random_input({1, 8, 1, 1})}, {}, "", "the operands broadcast");
  // Clip reads its bounds from inputs 1 and 2.
  expect_impl_match("Clip", {random_input({37}), Tensor::scalar(-0.5, DType::f32), Tensor::scalar(0.25, DType::f32)}, {},
                    "texel");
  // An empty tensor.
  expect_impl_match("Relu", {random_input({0, 3})}, {}, "texel");
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
// count_include_pad both ways, rows shorter than 4, f16, windows whose taps unroll (up to 8
// high and wide, strides and dilations up to 4 along rows) and larger ones, outputs stored as
// 4-element vectors (widths 8, 12, 16) or not, NaN inputs (MaxPool takes NaN only as a
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
      {{1, 6, 8, 8}, a({3, 3}, {1, 1}, {1, 1, 1, 1})},              // Inception's pool branch
      // A row's taps unrolled (ROW) up to 8 wide, strides and dilations up to 4; past those
      // the taps loop: 9 wide, stride 5.
      {{2, 3, 10, 19}, a({5, 8}, {1, 4}, {2, 3, 2, 3})},
      {{1, 4, 8, 21}, a({3, 3}, {1, 1}, {1, 1, 1, 1}, {4, 4})},
      {{1, 3, 12, 30}, a({3, 9}, {1, 2}, {1, 4, 1, 4})},
      {{1, 2, 9, 26}, a({2, 3}, {2, 5}, {0, 1, 0, 1})},
      {{1, 2, 12, 12}, a({9, 3}, {1, 1}, {4, 1, 4, 1})},  // 9 high: the taps loop; vector stores
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
// for plans that do not qualify (copy.comp) alike, with the copies that qualify as transfers
// (below) taken that way and through the shaders.
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
    for (const Call& c : calls)
      for (bool regions : {true, false}) {
        RegionCopies mode(regions);
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
        EXPECT_EQ(gb, wb) << c.op << " " << dtype_name(dt) << " " << shape_str(w.shape()) << " region copies "
                          << regions;
      }
  }
}

// Copies as transfers (kernels/vulkan/movement.cpp): on a CPU-like device a copy of whole
// contiguous runs is one vkCmdCopyBuffer of a region per run when it has at most 128 runs, or
// at most 4096 runs of at least 1024 bytes; otherwise a copy shader runs. Each side of each
// limit, with what the device wrote checked byte for byte against the cpu (outputs poisoned),
// and calls that are never transfers (the innermost axis moved or stepped) or are (a broadcast
// over an outer axis, whose runs read one source run again; a reversed outer axis).
TEST(VulkanTexelElementwise, CopiesOfWholeRunsAreTransfers) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  using V = std::vector<int64_t>;
  auto ints = [](const V& v) { return Tensor::from_values(std::vector<double>(v.begin(), v.end()), {static_cast<int64_t>(v.size())}, DType::i64); };
  vk::Context& ctx = vk::context(0);
  // Runs `op` on the cpu and on vulkan:0; the device's bytes must be the cpu's, and the device
  // must have recorded `transfers` region copies.
  auto check = [&](const char* op, const std::vector<Tensor>& in, const Attributes& attrs, uint64_t transfers) {
    Tensor want = call_op(op, in, attrs).at(0).contiguous();
    const uint64_t before = ctx.region_copies_recorded;
    Tensor got;
    {
      Poisoned poison;
      got = call_op(op, to_vk(in), attrs).at(0).to(Device::cpu()).contiguous();
    }
    EXPECT_EQ(ctx.region_copies_recorded - before, transfers) << op;
    ASSERT_EQ(got.shape(), want.shape()) << op;
    std::vector<uint8_t> gb(got.nbytes()), wb(want.nbytes());
    got.copy_to_host(gb.data(), gb.size());
    want.copy_to_host(wb.data(), wb.size());
    EXPECT_EQ(gb, wb) << op;
  };
  struct Case {
    Shape x;  // a Transpose (1, 0, 2) of x: x[0] * x[1] runs of x[2] elements
    DType dt;
    bool transfer;
  };
  const std::vector<Case> cases = {
      {{2, 64, 3}, DType::f32, true},     {{3, 43, 3}, DType::f32, false},      // 128 and 129 short runs
      {{1, 3, 5}, DType::f32, true},      {{2, 64, 1}, DType::f16, false},       // runs of one element: strided
      {{3, 43, 256}, DType::f32, true},   {{3, 43, 255}, DType::f32, false},    // runs of 1024 and 1020 bytes
      {{3, 43, 512}, DType::f16, true},   {{3, 43, 1023}, DType::i8, false},
      {{2, 2048, 256}, DType::f32, true}, {{17, 241, 256}, DType::f32, false},  // 4096 and 4097 long runs
      {{7, 5, 129}, DType::i64, true},    {{0, 4, 8}, DType::f32, false},       // no elements: nothing recorded
  };
  for (const Case& c : cases) {
    if (c.dt == DType::f16 && !ctx.caps().fp16_storage) continue;
    SCOPED_TRACE(str(shape_str(c.x), " ", dtype_name(c.dt)));
    Tensor x = random_input(c.x, DType::f32, -100, 100);
    if (c.dt != DType::f32) x = x.cast(c.dt);
    check("Transpose", {x}, {{"perm", V{1, 0, 2}}}, c.transfer ? 1 : 0);
  }
  Tensor x = random_input({4, 6, 8});
  check("Transpose", {x}, {{"perm", V{0, 2, 1}}}, 0);
  check("Slice", {x, ints({0}), ints({8}), ints({2}), ints({2})}, {}, 0);
  check("Expand", {call_op("Slice", {x, ints({0}), ints({1}), ints({0})}).at(0), ints({3, 6, 8})}, {}, 1);
  check("Slice", {x, ints({-1}), ints({-5}), ints({0}), ints({-1})}, {}, 1);
  // Turned off, the same copy runs its shader.
  RegionCopies off(false);
  check("Transpose", {x}, {{"perm", V{1, 0, 2}}}, 0);
}

// The transfer itself (vk::Context::copy_regions): source and destination spans that overlap
// in one buffer record nothing and answer false (the copy then runs its shader); overlapping
// destination regions and regions past either buffer are refused with the sizes. Disjoint
// regions of one buffer move.
TEST(VulkanTexelElementwise, RegionCopiesRefuseOverlapsAndOverruns) {
  REQUIRE_VULKAN();
  vk::Context& ctx = vk::context(0);
  Tensor t = Tensor::from_values(std::vector<double>(64, 0.0), {64}, DType::f32).to(Device{DeviceType::vulkan, 0});
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  t.copy_from_host(v.data(), v.size() * 4);
  auto* b = static_cast<vk::Buffer*>(t.storage()->handle());
  const VkDeviceSize at = static_cast<VkDeviceSize>(t.offset()) * 4;
  const uint64_t before = ctx.region_copies_recorded;
  EXPECT_FALSE(ctx.copy_regions(b, b, {{at, at + 16, 32}}));  // [0, 32) onto [16, 48)
  EXPECT_EQ(ctx.region_copies_recorded, before);
  std::string msg = error_message<InvalidArgument>([&] { ctx.copy_regions(b, b, {{at, at + 128, 32}, {at + 32, at + 144, 32}}); });
  EXPECT_NE(msg.find("overlap in the destination"), std::string::npos) << msg;
  msg = error_message<InvalidArgument>([&] { ctx.copy_regions(b, b, {{at, at + b->size, 4}}); });
  EXPECT_NE(msg.find("overruns a buffer"), std::string::npos) << msg;
  // Elements 0-7 to 32-39 and 8-11 to 48-51, one transfer.
  EXPECT_TRUE(ctx.copy_regions(b, b, {{at, at + 128, 32}, {at + 32, at + 192, 16}}));
  EXPECT_EQ(ctx.region_copies_recorded, before + 1);
  std::vector<float> got(64);
  t.copy_to_host(got.data(), got.size() * 4);
  for (int i = 0; i < 64; ++i) {
    float want = i >= 32 && i < 40 ? static_cast<float>(i - 32) : i >= 48 && i < 52 ? static_cast<float>(i - 40)
                                                                                     : static_cast<float>(i);
    EXPECT_EQ(got[static_cast<size_t>(i)], want) << i;
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

// RmsNorm (kernels/vulkan/rms_norm.cpp): "rows" against the workgroup kernel and the float64
// reference; rows of 4 to 4096 elements, ranks 1 to 3, one row and more rows than a workgroup
// has invocations, a large common offset (the mean of squares of values near 100), and the
// calls it declines (rows not a multiple of 4 long).
TEST(VulkanTexelElementwise, RmsNormRowsMatchReferenceAndTheWorkgroupKernel) {
  REQUIRE_VULKAN();
  if (!cpu_like()) GTEST_SKIP() << "vulkan:0 is a GPU";
  const std::vector<Shape> shapes = {{4}, {1, 8}, {3, 4}, {2, 17, 64}, {130, 96}, {5, 4096}};
  for (DType dt : {DType::f32, DType::f16}) {
    if (dt == DType::f16 && !vk::context(0).caps().fp16_storage) continue;
    for (const Shape& x : shapes) {
      const Shape scale{x.back()};
      std::vector<Tensor> in = {random_input(x, dt, -3, 3), random_input(scale, dt)};
      SCOPED_TRACE(shape_str(x));
      expect_impl_match("RmsNorm", in, {{"epsilon", 1e-5}}, "rows");
      if (dt == DType::f32) {
        std::vector<Tensor> offset = in;
        offset[0] = random_input(x, dt, 99, 101);
        expect_impl_match("RmsNorm", offset, {}, "rows");
      }
      DisabledKernels plain("vulkan:RmsNorm:rows");
      expect_impl_match("RmsNorm", in, {{"epsilon", 1e-5}}, "");
    }
  }
  expect_impl_match("RmsNorm", {random_input({3, 6}), random_input({6})}, {}, "", "rows of 6 elements");
  expect_impl_match("RmsNorm", {random_input({2, 1}), random_input({1})}, {{"epsilon", 0.5}}, "", "rows of 1 elements");
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
