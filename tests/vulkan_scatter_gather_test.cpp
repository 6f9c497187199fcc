// ScatterND / ScatterElements on vulkan under the driver's cap on loop iterations per
// invocation (lavapipe: 65535, shared by all loops of an invocation and silently ending them
// once spent; vk_kernel.hpp's loop_limit). scatter.comp folds each target's group of duplicate
// updates in one loop; the launcher splits a group longer than the cap over dispatches.
// With a tiny cap forced every reduction case of the schemas runs split and still matches the
// float64 reference; at the real cap a group of 200000 updates of one element runs natively
// and exactly. Validation errors fail these tests too (the listener of tests/vulkan_test.cpp).
#include <gtest/gtest.h>

#include <vector>

#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

// Every f32 case of the scatters, natively on vulkan:0, against the reference.
int check_scatter_cases() {
  int checked = 0;
  for (const char* name : {"ScatterND", "ScatterElements"}) {
    for (const OpCase& c : find_op(name)->cases()) {
      if (!dtype_in(c.dtypes, DType::f32)) continue;
      std::vector<Tensor> host, dev;
      for (const InputSpec& s : c.inputs) host.push_back(make_input(s, DType::f32));
      for (const Tensor& t : host) dev.push_back(t.to(kVk));
      EXPECT_EQ(resolve_vk(name, dev, c.attrs).path, Path::native) << name << " " << c.name;
      std::vector<Tensor> ref = reference_op(name, host, c.attrs, 1);
      Comparison cmp = compare(call_op(name, dev, c.attrs).at(0), ref.at(0), default_tolerance(DType::f32));
      EXPECT_TRUE(cmp.ok) << name << " " << c.name << ": " << cmp.message;
      ++checked;
    }
  }
  return checked;
}

// Cap 3: at most two updates folded per dispatch, so every group of duplicates is split.
TEST(VulkanScatter, GroupsSplitOverDispatchesMatchReference) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(3);
  EXPECT_GT(check_scatter_cases(), 15);
}

// 200000 updates of one element (past lavapipe's 65535 loop iterations) add up exactly.
TEST(VulkanScatter, LongDuplicateGroupAtTheRealCap) {
  REQUIRE_VULKAN();
  const int64_t n = 200000;
  std::vector<float> ones(n, 1.0f), data{5, 6, 7};
  std::vector<int64_t> idx(n, -2);
  Tensor d = Tensor::from_host(data.data(), {3}, DType::f32, Device::cpu()).to(kVk);
  Tensor i = Tensor::from_host(idx.data(), {n, 1}, DType::i64, Device::cpu()).to(kVk);
  Tensor u = Tensor::from_host(ones.data(), {n}, DType::f32, Device::cpu()).to(kVk);
  Attributes add{{"reduction", std::string("add")}};
  EXPECT_EQ(resolve_vk("ScatterND", {d, i, u}, add).path, Path::native);
  EXPECT_EQ(call_op("ScatterND", {d, i, u}, add).at(0).to(Device::cpu()).to_doubles(),
            (std::vector<double>{5, 6 + n, 7}));
  Tensor e = Tensor::from_host(idx.data(), {n}, DType::i64, Device::cpu()).to(kVk);
  Attributes max{{"reduction", std::string("max")}};
  EXPECT_EQ(call_op("ScatterElements", {d, e, u}, max).at(0).to(Device::cpu()).to_doubles(),
            (std::vector<double>{5, 6, 7}));
}

}  // namespace
}  // namespace porta::test
