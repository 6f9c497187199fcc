// Vulkan-specific tests: device listing and capability record, validation (with
// synchronization validation) active for the whole test binary, barriers in batches,
// tensors over maxStorageBufferRange, out-of-memory, buffer reuse, timestamps.
//
// Every Vulkan validation error reported while any test of this binary runs (conformance
// included) fails that test: the listener below is installed before the instance exists.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <iostream>
#include <numeric>

#include "backends/vulkan/vk_context.hpp"
#include "backends/vulkan/vk_validation.hpp"
#include "runtime/eager.hpp"
#include "tests/custom_test_util.hpp"
#include "runtime/kernel_call.hpp"
#include "tests/test_util.hpp"
#include "tests/vulkan_shared_test.hpp"

namespace porta::test {
namespace {

const bool kValidationInstalled = [] {
  // ctest sets this too; set it here so running the binary directly is validated as well.
  setenv("PORTA_VULKAN_VALIDATION", "1", 0);
  vk::set_validation_listener([](const std::string& msg) {
    ADD_FAILURE() << "Vulkan validation error: " << msg;
  });
  return true;
}();

Tensor random_tensor(const Shape& shape, double lo = -2, double hi = 2) {
  InputSpec s;
  s.shape = shape;
  s.lo = lo;
  s.hi = hi;
  return make_input(s, DType::f32);
}

TEST(Vulkan, DevicesListedWithCapabilityRecord) {
  REQUIRE_VULKAN();
  Backend* b = find_backend(DeviceType::vulkan);
  ASSERT_NE(b, nullptr);
  ASSERT_GE(b->device_count(), 1);
  int last_rank = -1;
  const std::vector<std::string> order = {"discrete", "integrated", "virtual", "cpu", "other"};
  for (int i = 0; i < b->device_count(); ++i) {
    Capabilities c = b->capabilities(i);
    EXPECT_FALSE(c.name.empty());
    auto rank = std::find(order.begin(), order.end(), c.type) - order.begin();
    ASSERT_LT(rank, static_cast<long>(order.size())) << "unknown type " << c.type;
    EXPECT_GE(rank, last_rank) << "devices must be ordered discrete > integrated > cpu";
    last_rank = static_cast<int>(rank);
  }
  Capabilities c = b->capabilities(0);
  EXPECT_GT(c.max_buffer_bytes, 0u);
  EXPECT_GE(c.subgroup_size, 1);
  EXPECT_TRUE(dtype_in(c.dtypes, DType::f32));
  std::vector<std::string> keys;
  for (auto& [k, v] : c.extra) keys.push_back(k);
  for (const char* want : {"subgroup ops", "fp16", "int8", "max storage buffer range", "max workgroup count",
                           "max workgroup size", "shared memory", "push constants", "timestamp period ns"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), want), keys.end()) << "capability record lacks " << want;
  const vk::DeviceCaps& caps = vk::context(0).caps();
  EXPECT_EQ(static_cast<uint64_t>(c.max_buffer_bytes), caps.max_storage_range);
}

TEST(Vulkan, ValidationLayerWithSyncValidationIsOn) {
  REQUIRE_VULKAN();
  EXPECT_TRUE(vk::validation_enabled()) << "PORTA_VULKAN_VALIDATION=1 should enable the layer";
}

// Without barriers, sync validation must report the read-after-write hazard: shows that the
// layer and the listener really catch missing synchronization.
TEST(Vulkan, MissingBarrierIsReportedBySyncValidation) {
  REQUIRE_VULKAN();
  if (!vk::validation_enabled()) GTEST_SKIP() << "validation disabled (tested above)";
  Tensor x = random_tensor({1000}).to(kVk);
  backend_for(kVk).synchronize(0);
  std::vector<std::string> seen;
  vk::set_validation_listener([&](const std::string& m) { seen.push_back(m); });
  vk::set_barriers_enabled(false);
  Tensor y = call_op("Relu", {x})[0];
  Tensor z = call_op("Relu", {y})[0];
  vk::set_barriers_enabled(true);
  backend_for(kVk).synchronize(0);
  vk::set_validation_listener([](const std::string& msg) { ADD_FAILURE() << "Vulkan validation error: " << msg; });
  vk::take_validation_errors();
  bool hazard = false;
  for (auto& m : seen) hazard |= m.find("SYNC-HAZARD-READ-AFTER-WRITE") != std::string::npos ||
                                 m.find("READ_AFTER_WRITE") != std::string::npos;
  EXPECT_TRUE(hazard) << "expected a read-after-write hazard report, got " << seen.size() << " messages";
}

// A chain of dependent ops recorded in one batch: right result, validation clean.
TEST(Vulkan, DependentChainInOneBatch) {
  REQUIRE_VULKAN();
  Tensor host = random_tensor({257, 33});
  Tensor expect = host;
  Tensor v = host.to(kVk);
  backend_for(kVk).begin_batch(0);
  for (int i = 0; i < 100; ++i) {
    v = call_op("Add", {v, v})[0];
    v = call_op("Relu", {v})[0];
    expect = call_op("Relu", {call_op("Add", {expect, expect})[0]})[0];
  }
  backend_for(kVk).end_batch(0);
  Comparison c = compare(v, expect.cast(DType::f64), 1e-6);
  EXPECT_TRUE(c.ok) << c.message;
}

TEST(Vulkan, BuffersReusedAcrossRuns) {
  REQUIRE_VULKAN();
  Tensor a = random_tensor({1 << 16}).to(kVk);
  auto run = [&] {
    Tensor t = a;
    for (int i = 0; i < 10; ++i) t = call_op("Add", {t, a})[0];
    backend_for(kVk).synchronize(0);
  };
  run();
  size_t after_first = vk::context(0).allocated_bytes();
  for (int i = 0; i < 5; ++i) run();
  EXPECT_EQ(vk::context(0).allocated_bytes(), after_first) << "device memory grew across identical runs";
}

// A wait for submitted work polls its fence before it blocks in the driver: on a CPU-like
// device for the whole run (no wait of a short run blocks), with the poll cut to nothing every
// wait that finds its work unfinished blocks. Both give the same values.
TEST(Vulkan, WaitsPollThenBlock) {
  REQUIRE_VULKAN();
  vk::Context& ctx = vk::context(0);
  // Small: the run lasts well under a millisecond, far inside the 100 ms poll even on a machine
  // busy with other tests (sanitizer builds, two suites at once).
  Tensor a = random_tensor({1 << 12});
  const Tensor a_dev = a.to(kVk);
  std::vector<float> want(a.numel());
  for (size_t j = 0; j < want.size(); ++j) {  // the device's sums, in its order
    float t = a.data<float>()[j];
    for (int i = 0; i < 20; ++i) t += a.data<float>()[j];
    want[j] = t;
  }
  auto run = [&] {  // a chain of Adds, then its result read back (one wait at least)
    Tensor t = a_dev;
    for (int i = 0; i < 20; ++i) t = call_op("Add", {t, a_dev})[0];
    std::vector<float> got(t.numel());
    t.copy_to_host(got.data(), got.size() * 4);
    EXPECT_EQ(got, want);
  };
  run();
  const double poll = ctx.wait_poll_us;
  if (ctx.caps().type == "cpu") {
    EXPECT_GE(poll, 1e5) << "a CPU-like device's waits poll for the whole run";
    const uint64_t waits = ctx.fence_waits, blocked = ctx.blocked_waits;
    run();
    EXPECT_GT(ctx.fence_waits, waits);
    EXPECT_EQ(ctx.blocked_waits, blocked) << "a wait of a short run blocked";
  }
  ctx.wait_poll_us = 0;
  const uint64_t blocked = ctx.blocked_waits;
  for (int i = 0; i < 3; ++i) run();  // each wait starts as the run's last work is submitted
  ctx.wait_poll_us = poll;
  EXPECT_GT(ctx.blocked_waits, blocked) << "with no poll, no wait blocked";
}

// An upload's last copy waits in the open command buffer (it goes up with whatever reads it
// next); the next upload through the staging buffer must not overwrite it first, nor a
// download read the staging buffer before it. Uploads in a row, a kernel reading one of them
// in between, then every tensor read back.
TEST(Vulkan, UploadsInARowKeepTheirData) {
  REQUIRE_VULKAN();
  std::vector<std::vector<float>> host;
  std::vector<Tensor> dev;
  for (int i = 0; i < 6; ++i) {
    std::vector<float> v(static_cast<size_t>((1 << 14) + 7 * i));
    for (size_t j = 0; j < v.size(); ++j) v[j] = static_cast<float>(static_cast<int>((j * 37 + i * 11) % 201) - 100);
    host.push_back(v);
    dev.push_back(Tensor::from_host(v.data(), {static_cast<int64_t>(v.size())}, DType::f32, kVk));
    if (i == 2) dev[1] = call_op("Relu", {dev[1]})[0];
  }
  for (float& x : host[1]) x = std::max(x, 0.0f);
  for (int i = 5; i >= 0; --i) {
    std::vector<float> got(host[i].size());
    dev[i].copy_to_host(got.data(), got.size() * 4);
    EXPECT_EQ(got, host[i]) << "upload " << i;
  }
}

TEST(Vulkan, OutOfMemoryIsAnErrorAndDeviceStaysUsable) {
  REQUIRE_VULKAN();
  uint64_t heap = vk::context(0).caps().device_local_bytes;
  try {
    Tensor huge = Tensor::empty({static_cast<int64_t>(heap / 4 + (1 << 20))}, DType::f32, kVk);
    FAIL() << "allocating more than the heap succeeded";
  } catch (const OutOfMemory& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("requested"), std::string::npos) << m;
    EXPECT_NE(m.find("available"), std::string::npos) << m;
  }
  Tensor x = random_tensor({100});
  Tensor y = call_op("Relu", {x.to(kVk)})[0];
  EXPECT_TRUE(compare(y, call_op("Relu", {x})[0].cast(DType::f64), 0).ok);
}

// 40M floats = 160 MB > lavapipe's 128 MiB maxStorageBufferRange.
TEST(Vulkan, TensorsLargerThanOneBinding) {
  REQUIRE_VULKAN();
  const vk::DeviceCaps& caps = vk::context(0).caps();
  int64_t n = static_cast<int64_t>(caps.max_storage_range / 4) + (5 << 20) + 3;
  if (static_cast<uint64_t>(n) * 4 * 4 > caps.device_local_bytes)
    GTEST_SKIP() << "device memory too small for this test";
  std::vector<float> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>((i % 1000) - 500);
    b[i] = static_cast<float>(i % 7);
  }
  Tensor da = Tensor::from_host(a.data(), {n}, DType::f32, kVk);
  Tensor db = Tensor::from_host(b.data(), {n}, DType::f32, kVk);
  KernelContext call;
  call.op = find_op("Add");
  call.device = kVk;
  call.backend = &backend_for(kVk);
  call.inputs = {da, db};
  EXPECT_EQ(resolve_call(call, DType::f32).path, Path::native);
  std::vector<float> got(n);
  call_op("Add", {da, db})[0].copy_to_host(got.data(), n * 4);
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != a[i] + b[i]) {
      ADD_FAILURE() << "Add element " << i << ": got " << got[i] << ", want " << a[i] + b[i];
      break;
    }
  call_op("Relu", {da})[0].copy_to_host(got.data(), n * 4);
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != std::max(a[i], 0.0f)) {
      ADD_FAILURE() << "Relu element " << i;
      break;
    }
  // Broadcasting over the limit declines visibly (CPU fallback) and is still right.
  Tensor one = Tensor::from_host(b.data() + 3, {1}, DType::f32, kVk);
  call.inputs = {da, one};
  Resolution r = resolve_call(call, DType::f32);
  EXPECT_NE(r.path, Path::native);
  EXPECT_NE(r.reason.find("maxStorageBufferRange"), std::string::npos) << r.reason;
  // An output that outgrows every input (Expand) declines too, before anything runs.
  KernelContext expand;
  expand.op = find_op("Expand");
  expand.device = kVk;
  expand.backend = &backend_for(kVk);
  Attributes no_attrs;
  expand.attrs = &no_attrs;
  expand.inputs = {one, Tensor::from_values({static_cast<double>(n)}, {1}, DType::i64).to(kVk)};
  Resolution er = resolve_call(expand, DType::f32);
  EXPECT_NE(er.path, Path::native);
  EXPECT_NE(er.reason.find("maxStorageBufferRange"), std::string::npos) << er.reason;
  call_op("Add", {da, one})[0].copy_to_host(got.data(), n * 4);
  for (int64_t i = 0; i < n; ++i)
    if (got[i] != a[i] + b[3]) {
      ADD_FAILURE() << "broadcast Add element " << i;
      break;
    }
}

TEST(Vulkan, TimestampTimerMeasuresDeviceTime) {
  REQUIRE_VULKAN();
  std::unique_ptr<Timer> timer = backend_for(kVk).create_timer(0);
  if (!vk::context(0).caps().timestamps) {
    EXPECT_EQ(timer, nullptr);
    return;
  }
  ASSERT_NE(timer, nullptr);
  Tensor x = random_tensor({1 << 20}).to(kVk);
  timer->start();
  Tensor y = call_op("Relu", {x})[0];
  timer->stop();
  EXPECT_GT(timer->elapsed_us(), 0.0);
}

}  // namespace
}  // namespace porta::test

namespace porta::test {
namespace {

// Device throughput from timestamp queries (opt-in: PORTA_VULKAN_BENCH=1). Prints GB/s for
// memory-bound ops next to the device's measured copy bandwidth, and GFLOP/s for MatMul.
TEST(VulkanBench, DeviceTimesFromTimestamps) {
  REQUIRE_VULKAN();
  if (!std::getenv("PORTA_VULKAN_BENCH")) GTEST_SKIP() << "set PORTA_VULKAN_BENCH=1 to measure";
  Backend& b = backend_for(kVk);
  std::unique_ptr<Timer> timer = b.create_timer(0);
  if (!timer) GTEST_SKIP() << "no timestamps on this device";
  auto time_us = [&](const std::function<void()>& f) {
    f();  // warm-up: pipelines, allocations
    b.synchronize(0);
    const int reps = 5;
    timer->start();
    for (int i = 0; i < reps; ++i) f();
    timer->stop();
    return timer->elapsed_us() / reps;
  };
  const int64_t n = 4096 * 4096;
  Tensor a = random_tensor({4096, 4096}).to(kVk), c = random_tensor({4096, 4096}).to(kVk);
  Tensor dst = Tensor::empty({4096, 4096}, DType::f32, kVk);
  double bytes = n * 4.0;
  double copy_us = time_us([&] { dst.copy_(a); });
  double copy_gbs = 2 * bytes / copy_us / 1e3;
  std::cout << "[ bench ] " << b.capabilities(0).name << "\n";
  std::cout << "[ bench ] copy 64 MiB: " << copy_us << " us, " << copy_gbs << " GB/s (read+write)\n";
  auto report = [&](const char* what, double us, double moved) {
    double gbs = moved / us / 1e3;
    std::cout << "[ bench ] " << what << ": " << us << " us, " << gbs << " GB/s (" << 100 * gbs / copy_gbs
              << "% of copy)\n";
  };
  report("Add 4096x4096", time_us([&] { call_op("Add", {a, c}); }), 3 * bytes);
  report("Relu 4096x4096", time_us([&] { call_op("Relu", {a}); }), 2 * bytes);
  report("Softmax 4096x4096 (axis -1)", time_us([&] { call_op("Softmax", {a}); }), 2 * bytes);
  Tensor m1 = random_tensor({1024, 1024}).to(kVk), m2 = random_tensor({1024, 1024}).to(kVk);
  double mm_us = time_us([&] { call_op("MatMul", {m1, m2}); });
  std::cout << "[ bench ] MatMul 1024^3: " << mm_us << " us, " << 2.0 * 1024 * 1024 * 1024 / mm_us / 1e3
            << " GFLOP/s\n";
  Tensor x = random_tensor({1, 64, 56, 56}).to(kVk), w = random_tensor({64, 64, 3, 3}).to(kVk);
  Attributes conv{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  double conv_us = time_us([&] { call_op("Conv", {x, w}, conv); });
  std::cout << "[ bench ] Conv 1x64x56x56, 64 3x3: " << conv_us << " us, "
            << 2.0 * 64 * 56 * 56 * 64 * 9 / conv_us / 1e3 << " GFLOP/s\n";
}

}  // namespace
}  // namespace porta::test

namespace porta::test {
namespace {

// The conformance suite runs reductions with the device's preferred strategy (subgroup
// arithmetic on lavapipe); this runs every case of the reducing ops again with the
// shared-memory tree, so both strategies are checked against the float64 reference.

// The conformance suite runs reductions with the device's preferred strategy (subgroup
// arithmetic on lavapipe); this runs every case of the reducing ops again with the
// shared-memory tree, so both strategies are checked against the float64 reference.
TEST(Vulkan, SharedMemoryReductionStrategyMatchesReference) {
  REQUIRE_VULKAN();
  vk::set_subgroup_reductions(false);
  struct Restore {
    ~Restore() { vk::set_subgroup_reductions(true); }
  } restore;
  EXPECT_GT(check_cases({"Softmax", "LogSoftmax", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ArgMax",
                         "ArgMin", "LayerNormalization", "InstanceNormalization", "GlobalAveragePool",
                         "GlobalMaxPool"}),
            10);
}

// Conv runs as the CPU-like devices' implementations (im2col for its small cases) or implicit
// GEMM in the conformance suite; the others are checked here on the same cases, with the
// earlier implementations disabled by name.
TEST(Vulkan, ImplicitGemmConvMatchesReference) {
  REQUIRE_VULKAN();
  DisabledKernels no_im2col(kTexelConvKernels);
  const Resolution& r = resolve(*find_op("Conv"), kVk, DType::f32);
  ASSERT_EQ(r.path, Path::native) << r.reason;
  EXPECT_EQ(r.kernel->impl.name, "implicit_gemm");
  EXPECT_GT(check_cases({"Conv"}), 3);
}

TEST(Vulkan, DirectConvMatchesReference) {
  REQUIRE_VULKAN();
  DisabledKernels no_gemm(std::string(kTexelConvKernels) + ",vulkan:Conv:implicit_gemm");
  const Resolution& r = resolve(*find_op("Conv"), kVk, DType::f32);
  ASSERT_EQ(r.path, Path::native) << r.reason;
  EXPECT_EQ(r.kernel->impl.name, "direct");
  EXPECT_GT(check_cases({"Conv"}), 3);
}

// No op silently falls back to the CPU. Every op the CPU runs natively for f32 has a
// native Vulkan kernel for f32, and the integer kernels (i32 always, i64 with shaderInt64)
// cover arithmetic, comparisons, Where, Cast and Range. (Single calls may still decline for
// device limits or attribute values; `porta ops` shows those per node.)
TEST(Vulkan, EveryF32OpAndTheIntegerOpsAreNative) {
  REQUIRE_VULKAN();
  int checked = 0;
  for (const OpSchema* op : all_ops()) {
    if (resolve(*op, Device::cpu(), DType::f32).path != Path::native) continue;
    // NonZero's output length follows its input's values, which porta reads on the host before
    // any kernel runs (a host input): sessions fold it, eager calls run it on the cpu.
    if (op->name == "NonZero") continue;
    const Resolution& r = resolve(*op, kVk, DType::f32);
    EXPECT_EQ(r.path, Path::native) << op->name << " f32: " << r.reason;
    ++checked;
  }
  EXPECT_GT(checked, 60);
  std::vector<DType> ints = {DType::i32, DType::i8, DType::u8};
  if (vk::context(0).caps().int64_arithmetic) ints.push_back(DType::i64);
  for (const char* name : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Abs", "Equal", "Less", "Greater", "Where",
                           "Cast", "Range"})
    for (DType t : ints) {
      const Resolution& r = resolve(*find_op(name), kVk, t);
      EXPECT_EQ(r.path, Path::native) << name << " " << dtype_name(t) << ": " << r.reason;
    }
  if (vk::context(0).caps().int64_arithmetic) {  // integer reductions accumulate in int64
    for (const char* name : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ArgMax", "ArgMin"})
      for (DType t : {DType::i32, DType::i64}) {
        const Resolution& r = resolve(*find_op(name), kVk, t);
        EXPECT_EQ(r.path, Path::native) << name << " " << dtype_name(t) << ": " << r.reason;
      }
    for (const char* name : {"ArgMax", "ArgMin"})
      for (DType t : {DType::i8, DType::u8})
        EXPECT_EQ(resolve(*find_op(name), kVk, t).path, Path::native) << name << " " << dtype_name(t);
  }
  for (const char* name : {"Neg", "Relu"})
    for (DType t : {DType::i32, DType::i64, DType::i8}) {
      if (t == DType::i64 && !vk::context(0).caps().int64_arithmetic) continue;
      EXPECT_EQ(resolve(*find_op(name), kVk, t).path, Path::native) << name << " " << dtype_name(t);
    }
}

// Constant has no inputs, so eager calls (and the conformance suite) run it on the cpu; its
// Vulkan kernel (an upload of the attribute) is called directly here.
TEST(Vulkan, ConstantKernelUploadsItsValue) {
  REQUIRE_VULKAN();
  const Resolution& r = resolve(*find_op("Constant"), kVk, DType::f32);
  ASSERT_EQ(r.path, Path::native) << r.reason;
  auto run = [&](const Attributes& attrs, const Shape& shape, DType dtype) {
    KernelContext ctx;
    ctx.op = find_op("Constant");
    ctx.attrs = &attrs;
    ctx.device = kVk;
    ctx.backend = &backend_for(kVk);
    ctx.outputs = {Tensor::empty(shape, dtype, kVk)};
    detail::run_kernel(*r.kernel, ctx);
    return ctx.outputs[0].to(Device::cpu()).to_doubles();
  };
  EXPECT_EQ(run({{"value_floats", std::vector<double>{1.5, -2, 3}}}, {3}, DType::f32),
            (std::vector<double>{1.5, -2, 3}));
  EXPECT_EQ(run({{"value_int", int64_t{-7}}}, {}, DType::i64), (std::vector<double>{-7}));
  EXPECT_EQ(run({{"value_ints", std::vector<int64_t>{4, 5}}}, {2}, DType::i64), (std::vector<double>{4, 5}));
  Tensor v = Tensor::from_values({1, 0, 1, 1}, {2, 2}, DType::boolean);
  EXPECT_EQ(run({{"value", v}}, {2, 2}, DType::boolean), (std::vector<double>{1, 0, 1, 1}));
}

// Dropout with training_mode = true is refused on the device as on the cpu.
// An integer ReduceMean truncates toward zero (C++ division of the int64 sum), which the
// float64 reference of the conformance suite cannot express for inexact means: vulkan:0 is
// checked against the cpu kernel on sums of both signs, past one workgroup, and with wrapping
// i32 sums. An empty integer mean is the same error on both.
TEST(Vulkan, IntegerMeanAndSumMatchTheCpu) {
  REQUIRE_VULKAN();
  if (!vk::context(0).caps().int64_arithmetic) GTEST_SKIP() << "the device has no shaderInt64";
  std::vector<double> v;
  for (int i = 0; i < 3 * 301; ++i) v.push_back((i * 7919) % 23 - (i / 301 == 1 ? 17 : 5));
  std::vector<double> big(3 * 301, 2147483000.0);  // i32 sums wrap
  for (DType t : {DType::i32, DType::i64})
    for (const auto* values : {&v, &big})
      for (const char* op : {"ReduceMean", "ReduceSum"}) {
        Tensor x = Tensor::from_values(*values, {3, 301}, t);
        Attributes a{{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
        std::vector<double> want = call_op(op, {x}, a).at(0).to_doubles();
        std::vector<double> got = call_op(op, {x.to(kVk)}, a).at(0).to(Device::cpu()).to_doubles();
        EXPECT_EQ(got, want) << op << " " << dtype_name(t);
      }
  Tensor empty = Tensor::empty({0, 4}, DType::i64);
  EXPECT_THROW(call_op("ReduceMean", {empty}), ShapeError);
  EXPECT_THROW(call_op("ReduceMean", {empty.to(kVk)}), ShapeError);
}

TEST(Vulkan, DropoutTrainingModeIsRefusedUnlessRatioIsZero) {
  REQUIRE_VULKAN();
  Tensor x = random_tensor({4, 3}).to(kVk);
  Tensor ratio = Tensor::from_values({0.5}, {}, DType::f32).to(kVk);
  Tensor on = Tensor::from_values({1}, {}, DType::boolean).to(kVk);
  EXPECT_THROW(call_op("Dropout", {x, ratio, on}), Unsupported);
  Tensor off = Tensor::from_values({0}, {}, DType::boolean).to(kVk);
  std::vector<Tensor> got = call_op("Dropout", {x, ratio, off}, {}, 2);
  EXPECT_EQ(got[0].to(Device::cpu()).to_doubles(), x.to(Device::cpu()).to_doubles());
  EXPECT_EQ(got[1].to(Device::cpu()).to_doubles(), std::vector<double>(12, 1.0));
  // training_mode = true with ratio 0 is the identity (torchvision's swin_t exports it).
  Tensor zero = Tensor::from_values({0}, {}, DType::f32).to(kVk);
  got = call_op("Dropout", {x, zero, on}, {}, 2);
  EXPECT_EQ(got[0].to(Device::cpu()).to_doubles(), x.to(Device::cpu()).to_doubles());
}

// Batch-major (layout 1) LSTM and GRU run in the Vulkan kernel, not through a fallback; the
// conformance cases (batch_major_*) check their values.
TEST(Vulkan, BatchMajorRnnIsNative) {
  REQUIRE_VULKAN();
  Attributes attrs{{"layout", int64_t{1}}, {"direction", std::string("bidirectional")}};
  for (int gates : {4, 3}) {
    const char* op = gates == 4 ? "LSTM" : "GRU";
    Resolution r = resolve_vk(op,
                              {random_tensor({3, 7, 5}).to(kVk), random_tensor({2, gates * 4, 5}).to(kVk),
                               random_tensor({2, gates * 4, 4}).to(kVk)},
                              attrs);
    EXPECT_EQ(r.path, Path::native) << op << ": " << r.reason;
  }
}

// Every f32 case of every op on vulkan:0 with the device pretending to allow only 1 workgroup
// along x: each kernel's grid must spread over y (set_grid) or the kernel must decline; either
// way the result matches the float64 reference. This is the class of the per-dimension
// dispatch limit (65535 on most devices), reached here with small shapes.
TEST(Vulkan, EveryOpPastTheWorkgroupCountLimit) {
  REQUIRE_VULKAN();
  vk::set_group_limit_override(0, 1);
  struct Restore {
    ~Restore() { vk::set_group_limit_override(0, 0); }
  } restore;
  std::vector<const char*> names;
  int native = 0, declined = 0;
  for (const OpSchema* op : all_ops()) {
    names.push_back(op->name.c_str());
    if (!op->cases) continue;
    for (const OpCase& c : op->cases()) {  // how many calls the kernels still take on
      if (c.perf || !dtype_in(c.dtypes, DType::f32)) continue;
      std::vector<Tensor> inputs;
      for (const InputSpec& in : c.inputs) inputs.push_back(in.absent ? Tensor() : make_input(in, DType::f32));
      try {
        (resolve_vk(op->name.c_str(), to_vk(inputs), c.attrs, DType::f32).path == Path::native ? native : declined)++;
      } catch (const Error&) {
      }
    }
  }
  EXPECT_GT(check_cases(names), 300);
  std::cout << "[  grid    ] 1 workgroup along x: " << native << " calls native, " << declined << " not\n";
  EXPECT_GT(native, 4 * declined);
}

// Mesa's llvmpipe (lavapipe) shares one budget of 65535 loop iterations between all the loops
// of a shader invocation and leaves every loop silently once it is spent. The context measures
// that cap with loop_probe.comp on first use; kernels size their work to it.
TEST(Vulkan, DriverLoopCapIsMeasured) {
  REQUIRE_VULKAN();
  vk::Context& c = vk::context(0);
  uint64_t cap = c.loop_limit();
  if (c.caps().driver.find("llvmpipe") != std::string::npos) EXPECT_EQ(cap, 65535u);
  else EXPECT_TRUE(cap == 0 || cap >= 1024) << cap;
}

// One LSTM/GRU call builder for the resolution checks below.
Resolution resolve_rnn(int gates, int64_t hidden, int64_t input_size, int64_t seq) {
  return resolve_vk(gates == 4 ? "LSTM" : "GRU",
                    {random_tensor({seq, 1, input_size}).to(kVk), random_tensor({1, gates * hidden, input_size}).to(kVk),
                     random_tensor({1, gates * hidden, hidden}).to(kVk)},
                    {}, DType::f32);
}

// With a cap of 60 iterations the RNN conformance cases (hidden 4, input 5: 19 per step) run
// two steps per dispatch, so every case carries h and c across dispatches, in both directions,
// with sequence lengths shorter than the split points and both layouts.
TEST(Vulkan, RnnSplitOverDispatchesMatchesReference) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(60);
  EXPECT_EQ(resolve_rnn(4, 4, 5, 7).path, Path::native);
  EXPECT_EQ(resolve_rnn(3, 4, 5, 7).path, Path::native);
  EXPECT_GT(check_cases({"LSTM", "GRU"}), 20);
}

// A step that alone exceeds the cap is declined with the reason, never run short.
TEST(Vulkan, RnnStepPastTheLoopCapIsDeclined) {
  REQUIRE_VULKAN();
  LoopCapOverride cap(20);
  Resolution r = resolve_rnn(4, 4, 5, 7);
  EXPECT_NE(r.path, Path::native);
  EXPECT_NE(r.reason.find("loop iterations"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace porta::test
