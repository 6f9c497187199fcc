// Vulkan-only checks of the ai.porta kernels that the shared conformance cases cannot make:
// RmsNorm's row reduction with the shared-memory tree strategy (the conformance suite runs
// lavapipe's preferred subgroup strategy), in f32 and f16 storage, against the float64
// reference. Compiled only when the Vulkan backend is built (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

TEST(VulkanCustomOps, RmsNormSharedMemoryReductionMatchesReference) {
  const Device d{DeviceType::vulkan, 0};
  std::string why = device_unusable(d);
  ASSERT_TRUE(why.empty()) << "the Vulkan backend is built but vulkan:0 is unusable: " << why;
  vk::set_subgroup_reductions(false);
  struct Restore {
    ~Restore() { vk::set_subgroup_reductions(true); }
  } restore;
  DisabledKernels rows("vulkan:RmsNorm:rows");  // CPU-like devices try it first
  const OpSchema& op = *find_op("RmsNorm");
  int checked = 0;
  for (DType dt : {DType::f32, DType::f16}) {
    for (const OpCase& c : op.cases()) {
      if (c.perf) continue;
      std::vector<Tensor> host, dev;
      for (const InputSpec& s : c.inputs) host.push_back(make_input(s, dt));
      for (const Tensor& t : host) dev.push_back(t.to(d));
      std::vector<Tensor> ref = reference_op("RmsNorm", host, c.attrs, 1);
      detail::set_poison_outputs(true);
      Tensor got = call_op("RmsNorm", dev, c.attrs, 1).at(0);
      detail::set_poison_outputs(false);
      EXPECT_EQ(got.dtype(), dt);
      Comparison cmp = compare(got, ref[0], dt == DType::f16 ? 4e-3 : default_tolerance(dt));
      EXPECT_TRUE(cmp.ok) << c.name << " " << dtype_name(dt) << ": " << cmp.message << " (seed " << seed() << ")";
      ++checked;
    }
  }
  EXPECT_GE(checked, 14);
}

}  // namespace
}  // namespace porta::test
