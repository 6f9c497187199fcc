// Vulkan kernels that loop over a row (reductions, normalisations, softmax) under the driver's
// cap on loop iterations per invocation (lavapipe: 65535, shared by all loops of an invocation
// and silently ending them once spent; see vk_kernel.hpp's loop_limit).
//
// With a small cap forced by vk::set_loop_limit_override, each kernel either splits its rows
// over several dispatches (float reductions: partial results per chunk of a row, then
// combined) and still matches the float64 reference, or declines with the reason (the call
// then runs on the CPU, still right). At the real cap, a ReduceSum row of 2^24+ elements runs
// natively (split) and a Softmax row just under its limit runs natively and right.
// Validation errors fail these tests too (the listener of tests/vulkan_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

using A = std::vector<int64_t>;

Tensor random_input(const Shape& shape, DType dtype = DType::f32, double lo = -2, double hi = 2) {
  InputSpec s;
  s.shape = shape;
  s.lo = lo;
  s.hi = hi;
  return make_input(s, dtype);
}

// Values with many ties (integers -8..8), for the arg reductions' first/last index.
Tensor tied_input(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 7919) % 17) - 8.0f;
  return Tensor::from_host(v.data(), shape, DType::f32, Device::cpu());
}

// Runs the op on vulkan:0 and compares every output with the float64 reference.
void expect_matches_reference(const char* name, const std::vector<Tensor>& host, const Attributes& attrs,
                              int outputs = 1, double tolerance = 0) {
  std::vector<Tensor> ref = reference_op(name, host, attrs, outputs);
  std::vector<Tensor> got = call_op(name, to_vk(host), attrs, outputs);
  ASSERT_EQ(got.size(), ref.size()) << name;
  for (size_t i = 0; i < got.size(); ++i) {
    double tol = tolerance > 0 ? tolerance : default_tolerance(got[i].dtype());
    Comparison cmp = compare(got[i], ref[i], tol);
    EXPECT_TRUE(cmp.ok) << name << " " << shape_str(host[0].shape()) << " output " << i << ": " << cmp.message;
  }
}

// The smallest forced cap under which the op runs natively for these inputs (0: none up to
// 10000). For the float reductions that is the cap where one workgroup reduces chunks of 256
// elements, the most passes a row can need.
uint64_t smallest_native_cap(const char* name, const std::vector<Tensor>& dev, const Attributes& attrs,
                             DType dtype = DType::f32) {
  for (uint64_t cap = 1; cap <= 10000; ++cap) {
    LoopCapOverride o(cap);
    if (resolve_vk(name, dev, attrs, dtype).path == Path::native) return cap;
  }
  return 0;
}

void expect_declined(const char* name, const std::vector<Tensor>& dev, const Attributes& attrs,
                     DType dtype = DType::f32) {
  Resolution r = resolve_vk(name, dev, attrs, dtype);
  EXPECT_NE(r.path, Path::native) << name << " " << shape_str(dev[0].shape());
  EXPECT_NE(r.reason.find("loop iterations"), std::string::npos) << name << ": " << r.reason;
}

struct ReduceCase {
  Shape shape;
  Attributes attrs;
};

std::vector<ReduceCase> reduce_cases() {
  return {
      {{3, 70001}, {{"axes", A{1}}}},                        // chunks of chunks: three dispatches at 256
      {{4, 3000, 5}, {{"axes", A{1}}}},                      // a strided row (inner 5)
      {{2, 300, 7, 11}, {{"axes", A{1, 2}}, {"keepdims", int64_t{0}}}},  // adjacent axes
      {{50, 3, 60}, {{"axes", A{0, 2}}}},                    // axes not adjacent: permuted first
      {{257, 259}, {{"keepdims", int64_t{0}}}},              // every axis
      {{5, 100}, {{"axes", A{1}}}},                          // a row within one chunk: one dispatch
  };
}

// Each float reduction under a cap where every workgroup reduces 256 elements (rows of 70001
// take three dispatches), under one a little larger, and one below which it declines.
TEST(VulkanLoopCapRows, FloatReductionsSplitRowsAndMatchReference) {
  REQUIRE_VULKAN();
  for (const char* name : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    std::vector<Tensor> probe = {random_input({3, 70001}).to(kVk)};
    Attributes axis1{{"axes", A{1}}};
    uint64_t smallest = smallest_native_cap(name, probe, axis1);
    ASSERT_GT(smallest, 1u) << name << " never runs natively under a small cap";
    {
      LoopCapOverride cap(smallest - 1);
      expect_declined(name, probe, axis1);
    }
    for (uint64_t c : {smallest, smallest + 3}) {
      LoopCapOverride cap(c);
      for (const ReduceCase& rc : reduce_cases()) {
        SCOPED_TRACE(testing::Message() << name << " cap " << c << " shape " << shape_str(rc.shape));
        std::vector<Tensor> host = {random_input(rc.shape)};
        EXPECT_EQ(resolve_vk(name, to_vk(host), rc.attrs, DType::f32).path, Path::native);
        // A sum of every element can cancel to near zero, where fp32's error, bounded by
        // the sum of magnitudes, is large against the result: scale the tolerance by that
        // condition number (sum |x| / |sum x|) for the whole-tensor sums and means.
        double tolerance = 0;
        if (!rc.attrs.has("axes") && std::string(name) != "ReduceMax" && std::string(name) != "ReduceMin") {
          double sum = 0, magnitude = 0;
          for (double v : host[0].to_doubles()) sum += v, magnitude += std::abs(v);
          tolerance = default_tolerance(DType::f32) * std::max(1.0, magnitude / std::max(std::abs(sum), 1e-30));
        }
        expect_matches_reference(name, host, rc.attrs, 1, tolerance);
      }
    }
  }
}

// Max and Min: a NaN in one chunk of a split row makes the row's result NaN.
TEST(VulkanLoopCapRows, MaxMinNaNCrossesChunks) {
  REQUIRE_VULKAN();
  std::vector<float> v(3 * 5000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 101);
  v[1 * 5000 + 4321] = std::numeric_limits<float>::quiet_NaN();
  Tensor host = Tensor::from_host(v.data(), {3, 5000}, DType::f32, Device::cpu());
  Attributes axis1{{"axes", A{1}}};
  for (const char* name : {"ReduceMax", "ReduceMin"}) {
    uint64_t smallest = smallest_native_cap(name, {host.to(kVk)}, axis1);
    ASSERT_GT(smallest, 0u);
    LoopCapOverride cap(smallest);
    std::vector<double> got = call_op(name, {host.to(kVk)}, axis1)[0].to(Device::cpu()).to_doubles();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0], std::string(name) == "ReduceMax" ? 100.0 : 0.0) << name;
    EXPECT_TRUE(std::isnan(got[1])) << name << " row 1: " << got[1];
    EXPECT_FALSE(std::isnan(got[2])) << name;
  }
}

// f16 storage: partial results are fp32, so long f16 rows keep their precision.
TEST(VulkanLoopCapRows, F16ReductionsSplitRowsAndMatchReference) {
  REQUIRE_VULKAN();
  if (!vk::context(0).caps().fp16_storage) GTEST_SKIP() << "no 16-bit storage";
  for (const char* name : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    Attributes axis1{{"axes", A{1}}};
    std::vector<Tensor> host = {random_input({2, 20000}, DType::f16)};
    uint64_t smallest = smallest_native_cap(name, to_vk(host), axis1, DType::f16);
    ASSERT_GT(smallest, 0u) << name;
    LoopCapOverride cap(smallest);
    expect_matches_reference(name, host, axis1);
  }
}

// ArgMax/ArgMin: partial (value, index) pairs per chunk; ties keep the first index, or the last
// with select_last_index, across chunks too.
TEST(VulkanLoopCapRows, ArgReductionsSplitRowsAndMatchReference) {
  REQUIRE_VULKAN();
  for (const char* name : {"ArgMax", "ArgMin"}) {
    std::vector<Tensor> probe = {tied_input({3, 70001}).to(kVk)};
    Attributes axis1{{"axis", int64_t{1}}};
    uint64_t smallest = smallest_native_cap(name, probe, axis1);
    ASSERT_GT(smallest, 1u) << name;
    {
      LoopCapOverride cap(smallest - 1);
      expect_declined(name, probe, axis1);
    }
    for (uint64_t c : {smallest, smallest + 2}) {
      LoopCapOverride cap(c);
      for (int64_t last : {0, 1}) {
        for (auto [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
                 {{3, 70001}, 1}, {{4, 3000, 5}, 1}, {{9000, 3}, 0}, {{5, 100}, 1}}) {
          SCOPED_TRACE(testing::Message() << name << " cap " << c << " shape " << shape_str(shape) << " last " << last);
          Attributes attrs{{"axis", axis}, {"select_last_index", last}, {"keepdims", int64_t{1}}};
          for (const Tensor& x : {tied_input(shape), random_input(shape)}) {
            EXPECT_EQ(resolve_vk(name, {x.to(kVk)}, attrs, DType::f32).path, Path::native);
            expect_matches_reference(name, {x}, attrs);
          }
        }
      }
    }
  }
}

// The conformance cases of the float reductions again, under the smallest cap that runs them.
TEST(VulkanLoopCapRows, ReductionConformanceCasesUnderSmallCap) {
  REQUIRE_VULKAN();
  int checked = 0;
  for (const char* name : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ArgMax", "ArgMin"}) {
    const OpSchema* op = find_op(name);
    ASSERT_TRUE(op && op->cases) << name;
    Attributes probe_attrs = std::string(name).rfind("Arg", 0) == 0 ? Attributes{{"axis", int64_t{1}}}
                                                                    : Attributes{{"axes", A{1}}};
    uint64_t smallest = smallest_native_cap(name, {random_input({2, 1000}).to(kVk)}, probe_attrs);
    ASSERT_GT(smallest, 0u) << name;
    LoopCapOverride cap(smallest);
    for (const OpCase& c : op->cases()) {
      if (c.perf || !dtype_in(c.dtypes, DType::f32)) continue;
      std::vector<Tensor> host;
      for (const InputSpec& s : c.inputs) host.push_back(s.absent ? Tensor() : make_input(s, DType::f32));
      std::vector<Tensor> ref;
      try {
        ref = reference_op(name, host, c.attrs, c.num_outputs);
      } catch (const Error&) {
        continue;  // error cases are the conformance suite's
      }
      std::vector<Tensor> dev;
      for (auto& t : host) dev.push_back(t.defined() ? t.to(kVk) : Tensor());
      std::vector<Tensor> got = call_op(name, dev, c.attrs, c.num_outputs);
      ASSERT_EQ(got.size(), ref.size()) << name << " " << c.name;
      for (size_t i = 0; i < got.size(); ++i) {
        if (!ref[i].defined()) continue;
        double tol = c.tolerance > 0 ? c.tolerance : default_tolerance(got[i].dtype());
        Comparison cmp = compare(got[i], ref[i], tol);
        EXPECT_TRUE(cmp.ok) << name << " " << c.name << ": " << cmp.message;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 30);
}

// Integer reductions (reduce_int.comp) run whole rows: past the cap they decline with the
// reason, and the call (on the CPU) is still right.
TEST(VulkanLoopCapRows, IntegerReductionsDeclinePastTheCap) {
  REQUIRE_VULKAN();
  if (!vk::context(0).caps().int64_arithmetic) GTEST_SKIP() << "no shaderInt64";
  LoopCapOverride cap(100);  // rows up to about 80 * 256 elements fit
  Attributes axis1{{"axes", A{1}}};
  for (DType t : {DType::i32, DType::i64}) {
    Tensor small = random_input({3, 5000}, t, -1000, 1000), big = random_input({3, 30000}, t, -1000, 1000);
    EXPECT_EQ(resolve_vk("ReduceSum", {small.to(kVk)}, axis1, t).path, Path::native);
    expect_declined("ReduceSum", {big.to(kVk)}, axis1, t);
    expect_declined("ArgMax", {big.to(kVk)}, {{"axis", int64_t{1}}}, t);
    // axes as an input (opset 13 ReduceSum): the row length comes from its values
    Tensor axes = Tensor::from_values({1}, {1}, DType::i64);
    EXPECT_EQ(resolve_vk("ReduceSum", {small.to(kVk), axes.to(kVk)}, {}, t).path, Path::native);
    expect_declined("ReduceSum", {big.to(kVk), axes.to(kVk)}, {}, t);
    for (const Tensor& x : {small, big}) {
      std::vector<double> want = reference_op("ReduceSum", {x}, axis1)[0].to_doubles();
      std::vector<double> got = call_op("ReduceSum", {x.to(kVk)}, axis1)[0].to(Device::cpu()).to_doubles();
      EXPECT_EQ(got, want) << dtype_name(t) << " " << shape_str(x.shape());
    }
  }
}

// Softmax, LogSoftmax, LayerNormalization, InstanceNormalization and RmsNorm loop over a whole
// row in one workgroup: short rows stay native under a small cap, long ones decline with the
// reason, and both are right.
TEST(VulkanLoopCapRows, RowKernelsDeclineLongRowsUnderSmallCap) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(300);  // three passes: rows up to about 60 * 256 elements
  struct Case {
    const char* name;
    Shape short_shape, long_shape;
    Attributes attrs;
    int extra_inputs;  // 1: scale [row]; 2: scale and bias [row] (or [C] for InstanceNorm)
  };
  std::vector<Case> cases = {
      {"Softmax", {4, 1000}, {2, 40000}, {{"axis", int64_t{-1}}}, 0},
      {"Softmax", {4, 1000, 3}, {2, 40000, 3}, {{"axis", int64_t{1}}}, 0},
      {"LogSoftmax", {4, 1000}, {2, 40000}, {{"axis", int64_t{-1}}}, 0},
      {"LayerNormalization", {4, 1000}, {2, 40000}, {{"axis", int64_t{-1}}}, 2},
      {"LayerNormalization", {4, 10, 100}, {2, 200, 200}, {{"axis", int64_t{1}}}, 2},
      {"InstanceNormalization", {2, 3, 1000}, {2, 3, 200, 200}, {}, 2},
      {"RmsNorm", {4, 1000}, {2, 40000}, {}, 1},
  };
  for (const Case& c : cases) {
    for (bool long_row : {false, true}) {
      const Shape& shape = long_row ? c.long_shape : c.short_shape;
      SCOPED_TRACE(testing::Message() << c.name << " " << shape_str(shape));
      std::vector<Tensor> host = {random_input(shape)};
      if (c.extra_inputs) {
        Shape param;
        if (std::string(c.name) == "InstanceNormalization") param = {shape[1]};
        else {
          int64_t axis = c.attrs.has("axis") ? c.attrs.get_int("axis") : -1;
          if (axis < 0) axis += static_cast<int64_t>(shape.size());
          param.assign(shape.begin() + axis, shape.end());
        }
        for (int i = 0; i < c.extra_inputs; ++i) host.push_back(random_input(param));
      }
      Resolution r = resolve_vk(c.name, to_vk(host), c.attrs, DType::f32);
      if (long_row) {
        EXPECT_NE(r.path, Path::native);
        EXPECT_NE(r.reason.find("loop iterations"), std::string::npos) << r.reason;
      } else {
        EXPECT_EQ(r.path, Path::native) << r.reason;
      }
      expect_matches_reference(c.name, host, c.attrs);
    }
  }
}

// At the device's own cap: one ReduceSum row of 2^24 + 3 elements (64 MiB of f32). On lavapipe
// one workgroup reduces at most ~14.7M elements, so this runs as partials plus a combining
// dispatch; a row ended early by the driver would miss millions of elements.
TEST(VulkanLoopCapRows, ReduceSumRowPastTheRealCap) {
  REQUIRE_VULKAN();
  const vk::DeviceCaps& caps = vk::context(0).caps();
  int64_t n = (int64_t{1} << 24) + 3;
  if (static_cast<uint64_t>(n) * 4 > caps.max_storage_range) GTEST_SKIP() << "binding too small";
  std::vector<float> v(n);
  double want = 0, magnitude = 0;
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f + 0.25f;
    want += v[i];
    magnitude += std::abs(v[i]);
  }
  Tensor x = Tensor::from_host(v.data(), {n}, DType::f32, kVk);
  Attributes all{{"keepdims", int64_t{0}}};
  EXPECT_EQ(resolve_vk("ReduceSum", {x}, all, DType::f32).path, Path::native);
  double got = call_op("ReduceSum", {x}, all)[0].to(Device::cpu()).to_doubles().at(0);
  EXPECT_NEAR(got, want, 1e-5 * magnitude) << "loop cap " << caps.loop_limit;
  double mean = call_op("ReduceMean", {x}, all)[0].to(Device::cpu()).to_doubles().at(0);
  EXPECT_NEAR(mean, want / static_cast<double>(n), 1e-5 * magnitude / static_cast<double>(n));
}

// At the device's own cap: a Softmax row just under the longest one that fits lavapipe's cap
// runs natively and right (the bound is not loose on the wrong side); a row past it declines
// there and is still right on the CPU.
TEST(VulkanLoopCapRows, SoftmaxRowsAtTheRealCap) {
  REQUIRE_VULKAN();
  const vk::DeviceCaps& caps = vk::context(0).caps();
  // 3 * (ceil(R / 256) + 1) + 2 * (256 / subgroup + 4) iterations within cap - cap / 8
  for (int64_t R : {int64_t{4800000}, int64_t{1} << 23}) {
    SCOPED_TRACE(testing::Message() << "row of " << R);
    std::vector<Tensor> host = {random_input({R}, DType::f32, -4, 4)};
    Resolution r = resolve_vk("Softmax", to_vk(host), {{"axis", int64_t{-1}}}, DType::f32);
    if (caps.loop_limit == 65535 && R > 4886784) {
      EXPECT_NE(r.path, Path::native);
      EXPECT_NE(r.reason.find("loop iterations"), std::string::npos) << r.reason;
    } else if (caps.loop_limit == 0 || caps.loop_limit == 65535) {
      EXPECT_EQ(r.path, Path::native) << r.reason;
    }
    expect_matches_reference("Softmax", host, {{"axis", int64_t{-1}}});
  }
}

}  // namespace
}  // namespace porta::test
