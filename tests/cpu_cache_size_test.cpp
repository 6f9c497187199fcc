// This CPU's cache sizes (kernels/cpu/cache_size.hpp), whether a session's constants stay in the
// last cache level, and the bytes of constants a session tells each kernel step
// (KernelContext::session_constant_bytes), which that answer is asked with.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "kernels/cpu/cache_size.hpp"
#include "runtime/registry.hpp"
#include "tests/reference_graph.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

TEST(CacheSize, LevelsGrowToTheLastOne) {
  const int64_t l1 = cpu::cache_bytes(1), l2 = cpu::cache_bytes(2), last = cpu::last_level_cache_bytes();
  if (l1 == 0 && last == 0) GTEST_SKIP() << "neither sysfs nor sysconf knows this CPU's caches";
  EXPECT_GT(l1, 0);
  EXPECT_GE(last, l1);
  if (l2 > 0) {
    EXPECT_GE(l2, l1);
    EXPECT_GE(last, l2);
  }
  EXPECT_EQ(cpu::cache_bytes(0), 0);
  EXPECT_EQ(cpu::cache_bytes(9), 0);
}

TEST(CacheSize, ConstantsStayCachedInHalfTheLastLevel) {
  cpu::force_constants_cached(-1);
  const int64_t last = cpu::last_level_cache_bytes();
  if (last == 0) GTEST_SKIP() << "the last cache level's size is unknown here";
  EXPECT_FALSE(cpu::constants_stay_cached(0));  // eager calls
  EXPECT_TRUE(cpu::constants_stay_cached(1));
  EXPECT_TRUE(cpu::constants_stay_cached(last / 2));
  EXPECT_FALSE(cpu::constants_stay_cached(last / 2 + 1));
  cpu::force_constants_cached(1);
  EXPECT_TRUE(cpu::constants_stay_cached(last * 4));
  cpu::force_constants_cached(0);
  EXPECT_FALSE(cpu::constants_stay_cached(1));
  cpu::force_constants_cached(-1);
  EXPECT_TRUE(cpu::constants_stay_cached(1));
}

// An Add kernel ahead of the built-in ones that records what each call was told.
std::atomic<int64_t> told{-1};
struct RecordingAdd {
  RecordingAdd() {
    KernelDef k;
    k.op = "Add";
    k.backend = DeviceType::cpu;
    k.dtypes = kF32;
    k.impl = {"recording", 1000};
    k.source = "cache_size_test";
    k.supports = [](const KernelContext& c) {
      return c.in(0).shape() == c.in(1).shape() ? std::string() : std::string("same shapes only");
    };
    k.fn = [](KernelContext& ctx) {
      told.store(ctx.session_constant_bytes);
      const float* a = ctx.in(0).data<float>();
      const float* b = ctx.in(1).data<float>();
      float* y = ctx.out(0).data<float>();
      for (int64_t i = 0; i < ctx.out(0).numel(); ++i) y[i] = a[i] + b[i];
    };
    register_kernel(std::move(k));
  }
  ~RecordingAdd() { detail::unregister_source("cache_size_test"); }
};

// Each constant counted once however many steps read it; graph inputs not at all; eager calls
// are told 0.
TEST(SessionConstantBytes, EachConstantOnceEagerCallsZero) {
  RecordingAdd recording;
  ReferenceGraph g;
  g.input("x", random_f32({250}));
  g.initializer("w1", random_f32({250}));
  g.initializer("w2", random_f32({100, 250}));
  g.node("Add", {"x", "w1"}, "a");
  g.node("Add", {"a", "w1"}, "b");
  g.node("Relu", {"b"}, "r");
  g.node("Add", {"r", "w2"}, "y");  // broadcast: the built-in kernel
  g.output("y");
  told.store(-1);
  ReferenceRun r = run_against_reference(g, {"y"});
  EXPECT_EQ(cpu_impl_of(r.plan, "Add"), "recording");
  EXPECT_EQ(told.load(), int64_t{250 + 100 * 250} * 4);

  ReferenceGraph plain;
  plain.input("x", random_f32({7}));
  plain.input("z", random_f32({7}));
  plain.node("Add", {"x", "z"}, "y");
  plain.output("y");
  told.store(-1);
  run_against_reference(plain, {"y"});
  EXPECT_EQ(told.load(), 0);

  told.store(-1);
  call_op("Add", {random_f32({5}), random_f32({5})});
  EXPECT_EQ(told.load(), 0);
}

}  // namespace
}  // namespace porta::test
