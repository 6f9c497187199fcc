// Op conformance: every op x case x dtype x device against the float64 reference, with fresh
// random inputs, poisoned outputs, and a second run with a non-contiguous first input.
#include <gtest/gtest.h>

#include <cmath>

#include "runtime/eager.hpp"
#include "runtime/registry.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct ConformanceParam {
  const OpSchema* op;
  OpCase c;
  DType dtype;
  Device device;
  std::string name;
};

std::vector<ConformanceParam> all_params() {
  std::vector<ConformanceParam> out;
  for (const OpSchema* op : all_ops()) {
    if (!op->cases) continue;
    for (const OpCase& c : op->cases()) {
      for (int d = 0; d < kNumDTypes; ++d) {
        DType dt = static_cast<DType>(d);
        if (!dtype_in(c.dtypes, dt)) continue;
        for (Device dev : test_devices()) {
          std::string name = str(op->name, "_", c.name, "_", dtype_name(dt), "_", dev.str());
          for (char& ch : name)
            if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
          out.push_back({op, c, dt, dev, name});
        }
      }
    }
  }
  return out;
}

class Conformance : public ::testing::TestWithParam<ConformanceParam> {};

void run_case(const ConformanceParam& p, bool strided_first) {
  std::string why = device_unusable(p.device);
  if (!why.empty()) {
    if (p.device.type == DeviceType::vulkan)
      FAIL() << "the Vulkan backend is built but " << p.device.str() << " is unusable: " << why;
    GTEST_SKIP() << p.device.str() << " unavailable: " << why;
  }
  // An eager call without inputs has no device to run on but the cpu (sessions place such
  // nodes with their consumers), so there is nothing device-specific to check.
  if (p.c.inputs.empty() && p.device.type != DeviceType::cpu)
    GTEST_SKIP() << "op without inputs: eager calls run on cpu";
  std::vector<Tensor> host;
  for (const InputSpec& s : p.c.inputs) host.push_back(s.absent ? Tensor() : make_input(s, p.dtype));
  if (strided_first) {
    if (host.empty() || !host[0].defined() || host[0].rank() < 1 || host[0].numel() < 2) GTEST_SKIP();
    // A view with stride 2 along the last axis over a buffer twice as wide.
    Shape wide = host[0].shape();
    wide.back() *= 2;
    Tensor buf = Tensor::zeros(wide, host[0].dtype());
    Tensor view = buf.slice(-1, 0, wide.back(), 2);
    view.copy_(host[0]);
    host[0] = view;
  }
  std::vector<Tensor> dev;
  for (auto& t : host) dev.push_back(t.defined() ? t.to(p.device) : Tensor());
  if (strided_first && p.device.type != DeviceType::cpu) {
    // Keep the first input strided on the device too.
    Shape wide = host[0].shape();
    wide.back() *= 2;
    Tensor buf = Tensor::zeros(wide, host[0].dtype(), p.device);
    Tensor view = buf.slice(-1, 0, wide.back(), 2);
    view.copy_(host[0]);
    dev[0] = view;
  }
  std::vector<DType> out_dtypes;
  std::vector<Tensor> ref = reference_op(p.op->name, host, p.c.attrs, p.c.num_outputs, &out_dtypes);
  // Outputs poisoned with NaN catch elements never written, except where the right value is NaN
  // itself: then the call runs again with a finite poison.
  bool ref_has_nan = false;
  for (const Tensor& r : ref)
    if (r.defined())
      for (double v : r.to_doubles()) ref_has_nan = ref_has_nan || std::isnan(v);
  for (bool finite_poison : {false, true}) {
    if (finite_poison && !ref_has_nan) break;
    detail::set_poison_outputs(true, finite_poison);
    std::vector<Tensor> got;
    try {
      got = call_op(p.op->name, dev, p.c.attrs, p.c.num_outputs);
    } catch (...) {
      detail::set_poison_outputs(false);
      throw;
    }
    detail::set_poison_outputs(false);
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < got.size(); ++i) {
      if (!ref[i].defined()) continue;
      ASSERT_TRUE(got[i].defined()) << "output " << i << " missing";
      EXPECT_EQ(got[i].device(), p.device);
      EXPECT_EQ(got[i].dtype(), out_dtypes[i]) << "output " << i;
      double tol = p.c.tolerance > 0 ? p.c.tolerance : default_tolerance(out_dtypes[i]);
      if (is_floating(out_dtypes[i]) && p.dtype != out_dtypes[i] && is_floating(p.dtype))
        tol = std::max(tol, default_tolerance(p.dtype));
      Comparison cmp = compare(got[i], ref[i], tol);
      EXPECT_TRUE(cmp.ok) << p.name << " output " << i << (finite_poison ? " (finite poison)" : "") << ": "
                          << cmp.message << " (seed " << seed() << ", set PORTA_TEST_SEED to reproduce)";
    }
  }
}

TEST_P(Conformance, MatchesReference) {
  const ConformanceParam& p = GetParam();
  if (p.c.perf && shape_numel(p.c.inputs.empty() ? Shape{} : p.c.inputs[0].shape) > (1 << 22) &&
      !std::getenv("PORTA_TEST_PERF_CASES"))
    GTEST_SKIP() << "perf-size case (set PORTA_TEST_PERF_CASES=1 to run)";
  run_case(p, false);
}

TEST_P(Conformance, NonContiguousInput) {
  const ConformanceParam& p = GetParam();
  if (p.c.perf) GTEST_SKIP() << "perf-size case";
  run_case(p, true);
}

INSTANTIATE_TEST_SUITE_P(Ops, Conformance, ::testing::ValuesIn(all_params()),
                         [](const auto& info) { return info.param.name; });

TEST(Registry, KernelsMatchSchemas) {
  std::vector<std::string> problems = detail::registry_problems();
  std::string all;
  for (auto& p : problems) all += p + "\n";
  EXPECT_TRUE(problems.empty()) << all;
}

}  // namespace
}  // namespace porta::test
