// porta tests — shared helpers: random inputs from case specs, comparison against the
// float64 reference, device lists.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "porta/porta.hpp"

namespace porta::test {

/// Seed for this process: PORTA_TEST_SEED if set, else fresh; printed on failures.
uint64_t seed();
std::mt19937_64& rng();
/// An f32 tensor of `shape` with fresh uniform values in [lo, hi) from rng().
Tensor random_f32(const Shape& shape, double lo = -1.0, double hi = 1.0);

/// Devices the conformance tests run on: every device of every built backend.
std::vector<Device> test_devices();
/// The kinds that run the kernels/cuda sources: cuda, hip, and gpu_emu (the SIMT emulator)
/// when it is built.
std::vector<DeviceType> gpu_device_types();
/// Empty when the device can run tests; otherwise the reason (tests are skipped, or for a
/// built Vulkan backend without a device, failed).
std::string device_unusable(Device d);

/// Whether the cpu computes a bf16 session's products in bf16. Where oneDNN has no bf16 (no
/// AVX-512, or ONEDNN_MAX_CPU_ISA below it: ctest precision_without_bf16) such a session
/// computes them in f32 and says so (Precision.CpuWithoutBf16ComputesInF32), and the tests of
/// the cpu's bf16 paths skip (SKIP_WITHOUT_CPU_BF16).
inline bool cpu_computes_bf16() {
  return !dtype_in(backend_for(Device::cpu()).capabilities(0).products_in_f32, DType::bf16);
}
#define SKIP_WITHOUT_CPU_BF16()                                                         \
  if (!::porta::test::cpu_computes_bf16())                                              \
  GTEST_SKIP() << "oneDNN has no bf16 on this CPU: a bf16 session computes its products " \
                  "in f32 here"

/// Makes the host tensor an InputSpec describes, in `dtype` (the case's dtype unless the spec
/// fixes one).
Tensor make_input(const InputSpec& spec, DType case_dtype);

struct Comparison {
  bool ok = true;
  double max_abs = 0, rel = 0;  // rel: ||out - ref||_2 / ||ref||_2
  std::string message;
};
/// Compares a result (any dtype/device) with an f64 reference of the same shape.
Comparison compare(const Tensor& result, const Tensor& reference, double tolerance);
/// Runs `f`, which must throw E, and returns the message (fails the test otherwise).
template <class E, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << E("").kind() << ", got another error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected " << E("").kind() << ", nothing was thrown";
  return "";
}

/// The porta CLI of this build run with `args` (and environment assignments `env` before it):
/// exit status and stdout and stderr together.
struct CliResult {
  int status = -1;
  std::string output;
};
CliResult porta_cli(const std::string& args, const std::string& env = "");

/// Default relative tolerance for results of a dtype.
double default_tolerance(DType t);

// Sets PORTA_FUSE for the scope (restored after).
struct FuseSetting {
  explicit FuseSetting(const char* value) {
    if (const char* old = std::getenv("PORTA_FUSE")) saved = old, had = true;
    setenv("PORTA_FUSE", value, 1);
  }
  ~FuseSetting() {
    if (had) setenv("PORTA_FUSE", saved.c_str(), 1);
    else unsetenv("PORTA_FUSE");
  }
  std::string saved;
  bool had = false;
};

/// The plan entry of the node named `node`; throws when there is none.
inline const NodePlan& plan_of_node(const std::vector<NodePlan>& plan, const std::string& node) {
  for (const NodePlan& p : plan)
    if (p.node == node) return p;
  throw std::runtime_error("no node " + node);
}
/// The `nth` plan entry of op `op` (0: the first), nullptr when there is none.
inline const NodePlan* find_plan_of_op(const std::vector<NodePlan>& plan, const std::string& op, int nth = 0) {
  for (const NodePlan& p : plan)
    if (p.op == op && nth-- == 0) return &p;
  return nullptr;
}
/// find_plan_of_op that throws when there is none.
inline const NodePlan& plan_of_op(const std::vector<NodePlan>& plan, const std::string& op, int nth = 0) {
  if (const NodePlan* p = find_plan_of_op(plan, op, nth)) return *p;
  throw std::runtime_error("no node of op " + op);
}

}  // namespace porta::test
