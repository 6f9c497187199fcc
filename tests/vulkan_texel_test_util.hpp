// Helpers the tests of the kernels for CPU-like Vulkan devices share
// (tests/vulkan_texel_variants_test.cpp: GEMM, Conv, RNN; tests/vulkan_texel_data_test.cpp:
// elementwise, normalization, pooling, reductions and data movement).
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "runtime/eager.hpp"
#include "tests/custom_test_util.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {

inline Tensor random_input(const Shape& shape, DType dtype = DType::f32, double lo = -1, double hi = 1) {
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
inline void expect_impl_match(const char* name, const std::vector<Tensor>& host, const Attributes& attrs,
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

// Lets vulkan:0's kernels run copies as transfer commands, or not, for the scope.
struct RegionCopies {
  explicit RegionCopies(bool on) : was(vk::context(0).region_copies) { vk::context(0).region_copies = on; }
  ~RegionCopies() { vk::context(0).region_copies = was; }
  bool was;
};

// Lets matmul_rows.comp share its A operand over a subgroup on vulkan:0, or not, for the scope.
struct SharedRowsOperand {
  explicit SharedRowsOperand(bool on) : was(vk::context(0).shared_rows_operand) {
    vk::context(0).shared_rows_operand = on;
  }
  ~SharedRowsOperand() { vk::context(0).shared_rows_operand = was; }
  bool was;
};

// Whether vulkan:0 is a CPU-like device (lavapipe), where the kernels under test come first.
inline bool cpu_like() { return vk::context(0).caps().type == "cpu"; }

}  // namespace porta::test
