// The cpu kernels' parallel loops (kernels/cpu/cpu_common.hpp): every index runs exactly once,
// and an exception thrown on a worker thread reaches the caller instead of terminating the
// process (an exception may not leave an OpenMP region).
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/thread_policy.hpp"
#include "porta/dispatch.hpp"
#include "runtime/registry.hpp"

namespace {

// Runs the body with two OpenMP threads (the machine may have one core), then restores.
template <typename F>
void with_two_threads(F&& f) {
  int old = omp_get_max_threads();
  omp_set_num_threads(2);
  f();
  omp_set_num_threads(old);
}

TEST(CpuParallel, ForCoversEveryIndexOnce) {
  with_two_threads([] {
    for (int64_t n : {0, 1, 2, 3, 17, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      porta::cpu::parallel_for(n, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " i " << i;
    }
  });
}

TEST(CpuParallel, TasksCoverEveryIndexOnceWithOneStatePerThread) {
  with_two_threads([] {
    for (int64_t n : {0, 1, 2, 5, 64}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> states{0};
      porta::cpu::parallel_tasks(
          n, [&] { return ++states; }, [&](int& state, int64_t i) {
            EXPECT_GE(state, 1);
            hits[static_cast<size_t>(i)]++;
          });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " i " << i;
      EXPECT_LE(states.load(), std::max<int64_t>(1, std::min<int64_t>(2, n)));
    }
  });
}

TEST(CpuParallel, ForRethrowsAWorkersException) {
  with_two_threads([] {
    EXPECT_THROW(porta::cpu::parallel_for(100, 1,
                                          [](int64_t b, int64_t) {
                                            if (b > 0) throw std::runtime_error("second chunk failed");
                                          }),
                 std::runtime_error);
  });
}

TEST(CpuParallel, TasksRethrowAnExceptionFromATaskOrFromMakingState) {
  with_two_threads([] {
    EXPECT_THROW(porta::cpu::parallel_tasks(
                     50, [] { return 0; },
                     [](int&, int64_t i) {
                       if (i == 7) throw std::runtime_error("task 7 failed");
                     }),
                 std::runtime_error);
    std::atomic<int> made{0};
    EXPECT_THROW(porta::cpu::parallel_tasks(
                     50,
                     [&] {
                       if (made++ == 0) throw std::bad_alloc();
                       return 0;
                     },
                     [](int&, int64_t) {}),
                 std::bad_alloc);
  });
}

// A oneDNN exception a cpu kernel lets through reaches the caller as porta's error naming the
// op (BackendError; OutOfMemory for oneDNN's out-of-memory status), not as dnnl::error.
TEST(CpuKernelCall, OneDnnErrorsBecomePortaErrors) {
  using namespace porta;
  OpSchema op;
  op.name = "TestOneDnnFailure";
  op.domain = "test.porta";
  op.inputs = {"X"};
  op.outputs = {"Y"};
  op.infer = [](InferContext& ctx) { ctx.set_output(0, ctx.shape(0), ctx.dtype(0)); };
  op.reference = [](KernelContext&) {};
  register_op(op);
  for (dnnl_status_t status : {dnnl_runtime_error, dnnl_out_of_memory}) {
    KernelDef k;
    k.op = op.name;
    k.backend = DeviceType::cpu;
    k.dtypes = kF32;
    k.source = "onednn_error_test";
    k.fn = [status](KernelContext&) { throw dnnl::error(status, "injected by the test"); };
    register_kernel(std::move(k));
    Tensor x = Tensor::zeros({4}, DType::f32);
    try {
      call_op(op.name, {x});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.kind()), status == dnnl_out_of_memory ? "OutOfMemory" : "BackendError");
      EXPECT_NE(std::string(e.what()).find("[TestOneDnnFailure] oneDNN failed"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("injected by the test"), std::string::npos) << e.what();
    }
    detail::unregister_source("onednn_error_test");
  }
}

// The thread policy's thresholds follow the fork/join measured on this machine
// (kernels/cpu/thread_policy.hpp): the measurement is a positive, finite time for two threads
// and nothing for one; the scale stays within [1, 8]; a call between the base and the scaled
// threshold runs on one thread only when scaled.
TEST(CpuThreadPolicy, ThresholdsScaleWithTheMeasuredForkJoin) {
  using namespace porta::cpu;
  EXPECT_EQ(measure_fork_join_us(1), 0.0);
  with_two_threads([] {
    const double measured = measure_fork_join_us(2);
    EXPECT_GT(measured, 0.0);
    EXPECT_LT(measured, 1e6);
    if (std::getenv("PORTA_PARALLEL_SCALE") == nullptr) {
      EXPECT_GE(parallel_scale(), 1.0);
      EXPECT_LE(parallel_scale(), 8.0);
    }
    if (std::getenv("PORTA_PARALLEL_MIN_BYTES") != nullptr || std::getenv("PORTA_PARALLEL_MIN_FLOPS") != nullptr)
      GTEST_SKIP() << "the thresholds are fixed by the environment";
    set_thread_policy_adaptive(false);  // a loaded machine keeps every call on one thread
    set_parallel_scale(1);
    EXPECT_EQ(parallel_min_bytes(), size_t{128} * 1024);
    EXPECT_DOUBLE_EQ(parallel_min_flops(), 1e6);
    EXPECT_EQ(threads_for(size_t{256} * 1024), 2);
    EXPECT_EQ(threads_for(1024, 1.5e6), 2);
    set_parallel_scale(4);
    EXPECT_EQ(parallel_min_bytes(), size_t{512} * 1024);
    EXPECT_DOUBLE_EQ(parallel_min_flops(), 4e6);
    EXPECT_EQ(threads_for(size_t{256} * 1024), 1);
    EXPECT_EQ(threads_for(1024, 1.5e6), 1);
    EXPECT_EQ(threads_for(size_t{1024} * 1024), 2);
    set_parallel_scale(0);
    set_thread_policy_adaptive(true);
  });
}

}  // namespace
