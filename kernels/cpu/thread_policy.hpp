// porta cpu kernels — how many threads one kernel call uses.
//
// A parallel region costs a fork/join: a few µs on an idle machine, and up to a scheduler time
// slice (milliseconds) when the cores are shared, because every OpenMP thread must run before
// the region ends. Calls whose whole work takes less than that single-threaded therefore run on
// the calling thread only; so do all calls while other processes load the cores
// (cores_oversubscribed). The policy is applied per call with a ThreadScope around both the
// creation and the execution of oneDNN primitives (oneDNN fixes some thread counts when a
// primitive is created, so the primitive cache key includes the thread count; see
// cached_primitive).
#pragma once
#include <omp.h>

#include <cstddef>

#include "porta/op.hpp"

namespace porta::cpu {

/// Single-threaded work below which a call stays on one thread: bytes read + written by a
/// memory-bound call (128 KiB), floating-point operations of a compute-bound one (1 MFLOP,
/// 6-12 µs of one core), both times parallel_scale(); why these values: thread_policy.cpp.
/// PORTA_PARALLEL_MIN_BYTES / PORTA_PARALLEL_MIN_FLOPS override them.
size_t parallel_min_bytes();
double parallel_min_flops();

/// What a parallel region of the process's threads costs here, µs: the median of 40 regions
/// (fork, join, a cache line handed back by each thread), measured once, by the first call
/// that may use more than one thread; 0 while that is one thread.
double fork_join_us();
double measure_fork_join_us(int threads);

/// The factor the parallel thresholds (the two above, and splits that kernels size themselves)
/// are multiplied by: fork_join_us() over 1 µs, clamped to [1, 8]. Where cores are far apart
/// (a VM whose vCPUs sit on different dies) a split costs more than its half saves well past
/// the base thresholds. PORTA_PARALLEL_SCALE overrides it.
double parallel_scale();

/// Fixes parallel_scale() for the whole process (tests of parallel paths that must split as at
/// the base thresholds on any machine); 0 returns it to the measured value.
void set_parallel_scale(double scale);

/// Bytes of every defined input and output of a call.
size_t call_bytes(const KernelContext& ctx);

/// True while the machine's 1-minute load average exceeds its cores + 1, i.e. other processes
/// keep more than one core busy besides porta's threads: a parallel region then waits for a
/// scheduler slice far more often than it gains (measured: 40-140 ms per small model at load
/// 9-12 on 2 cores, against 0.1-4 ms on one thread). Checked at most 4 times a second.
/// PORTA_THREAD_POLICY=fixed turns this adaptation off (threads then follow size only).
bool cores_oversubscribed();

/// Turns that adaptation on or off for the whole process (tests of a parallel path that must
/// run whatever the machine's load); PORTA_THREAD_POLICY=fixed starts with it off.
void set_thread_policy_adaptive(bool adaptive);

/// Threads for a call that moves `bytes` and computes `flops`: 1 for small calls or an
/// oversubscribed machine, else omp_get_max_threads().
int threads_for(size_t bytes, double flops = 0);

/// Threads the running cpu kernel call may use at most: OpenMP's count when the call began, or 1
/// when the policy keeps every call on one thread (an oversubscribed machine, a call made
/// inside a parallel region). A call's ThreadScope may be narrower (small calls run on one
/// thread); a kernel that splits its work itself (the Winograd Conv's row blocks) or that
/// earns threads by its own measure (Conv's flops threshold) widens it up to this.
int call_thread_budget();

/// Limits the OpenMP threads of the calling thread's parallel regions (and of oneDNN
/// primitives created and run) while it lives; restores the previous limit after.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) {
    if (threads != saved_) omp_set_num_threads(threads);
  }
  /// Scope for a kernel call: threads_for(call_bytes(ctx), flops).
  explicit ThreadScope(const KernelContext& ctx, double flops = 0)
      : ThreadScope(threads_for(call_bytes(ctx), flops)) {}
  ~ThreadScope() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace porta::cpu
