// porta cpu kernels — thresholds of the per-call thread policy (see thread_policy.hpp).
#include "kernels/cpu/thread_policy.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/kernel_call.hpp"

namespace porta::cpu {
namespace {

double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  return end && *end == '\0' && d >= 0 ? d : fallback;
}

// 1 MFLOP is about 6 us of one AVX-512 core and 12 us of an AVX2 one: several fork/joins.
// The base was 5 MFLOP until an AVX2 Zen 3 (fork/join 1.7 us, so x1.7) showed oneDNN's direct
// convs of 2-8 MFLOP scaling 1.4x on two threads (squeezenet1_1's 16->64 3x3 over 15x15:
// 48 -> 34 us): at two threads, alternating processes, fastest of 7x100 runs, squeezenet1_1
// -9%, resnet18 and googlenet -3%, regnet_y_400mf and efficientnet_b0 a further -3% from
// 2 to 1 MFLOP, the other zoo models and the examples within +-1%. Below that (0.5 MFLOP)
// transformer's small products went 4.6% slower. 128 KiB of traffic is only a few µs, but a
// call that reads what a parallel call just wrote pays for the half that sits in the other
// core's cache: on cnn (2 threads, idle cores emulated with chrt -f) the MaxPools after the
// parallel Convs took 10-23 µs on one thread against 5-6 µs when nothing ran in parallel;
// with 128 KiB instead of 512 KiB they run on both threads and the model went 173-186 ->
// 154-156 µs, while transformer, mlp, attention, image and lstm did not move (64 KiB made
// transformer 58 -> 69 µs). These base values hold where a fork/join costs at most
// kForkJoinReferenceUs; parallel_scale() raises them where it costs more.
constexpr double kMinBytesBase = 128.0 * 1024, kMinFlopsBase = 1e6;

// The VM's cores do not always sit near each other: on 2026-12-04 the same 2-vCPU machine
// measured an empty 2-thread region at 3.4-4.4 µs and a 4 MB stream split over both threads
// slower than on one (the other core pulls its half from far away). At the base thresholds 10
// of 27 zoo models then ran slower on two threads than on one (squeezenet1_1 292 -> 389 µs);
// with both thresholds x4 each of the eight tried moved 2-18% faster on two threads, x8 on
// bytes was worse again for the mobile nets (docs/PERFORMANCE.md, the Log of 2026-12-04). So
// the thresholds scale with the measured cost over this reference, from 1 to 8.
constexpr double kForkJoinReferenceUs = 1.0;
constexpr double kMaxScale = 8.0;

double median_of(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

double measure_fork_join_us(int threads) {
  if (threads <= 1) return 0;
  using clock = std::chrono::steady_clock;
  auto us_since = [](clock::time_point t) { return std::chrono::duration<double, std::micro>(clock::now() - t).count(); };
  // Each thread writes its own cache line, which the calling thread then reads: the region's
  // fork, join and one line handed across cores, as a kernel's split pays. A few µs of serial
  // work before each region, as between two steps; the first regions (thread creation) are
  // not counted.
  struct alignas(64) Line {
    double value;
  };
  std::vector<Line> lines(static_cast<size_t>(threads));
  std::vector<double> samples;
  double sink = 0;
  for (int i = 0; i < 8 + 40; ++i) {
    const auto gap = clock::now();
    while (us_since(gap) < 5) {
    }
    const auto t0 = clock::now();
#pragma omp parallel num_threads(threads)
    lines[static_cast<size_t>(omp_get_thread_num())].value = static_cast<double>(i);
    for (const Line& l : lines) sink += l.value;
    if (i >= 8) samples.push_back(us_since(t0));
  }
  return median_of(std::move(samples)) + (sink < 0 ? 1 : 0);  // sink keeps the reads
}

double fork_join_us() {
  // Measured once, by the first caller that may use more than one thread (a process held to
  // one thread never forks, and never pays for the measurement).
  static std::atomic<double> measured{-1};
  double v = measured.load(std::memory_order_acquire);
  if (v >= 0) return v;
  if (omp_in_parallel() || omp_get_max_threads() <= 1) return 0;
  static std::mutex once;
  std::lock_guard<std::mutex> lock(once);
  v = measured.load(std::memory_order_relaxed);
  if (v < 0) {
    v = measure_fork_join_us(omp_get_max_threads());
    measured.store(v, std::memory_order_release);
  }
  return v;
}

namespace {
std::atomic<double> scale_override{0};
}  // namespace

void set_parallel_scale(double scale) { scale_override.store(scale > 0 ? scale : 0, std::memory_order_relaxed); }

double parallel_scale() {
  const double set = scale_override.load(std::memory_order_relaxed);
  if (set > 0) return set;
  static const double given = env_number("PORTA_PARALLEL_SCALE", -1);
  if (given > 0) return given;
  return std::clamp(fork_join_us() / kForkJoinReferenceUs, 1.0, kMaxScale);
}

size_t parallel_min_bytes() {
  static const double given = env_number("PORTA_PARALLEL_MIN_BYTES", -1);
  return static_cast<size_t>(given >= 0 ? given : kMinBytesBase * parallel_scale());
}

double parallel_min_flops() {
  static const double given = env_number("PORTA_PARALLEL_MIN_FLOPS", -1);
  return given >= 0 ? given : kMinFlopsBase * parallel_scale();
}

size_t call_bytes(const KernelContext& ctx) {
  size_t bytes = 0;
  for (const Tensor& t : ctx.inputs)
    if (t.defined()) bytes += t.nbytes();
  for (const Tensor& t : ctx.outputs)
    if (t.defined()) bytes += t.nbytes();
  return bytes;
}

namespace {
std::atomic<bool>& adaptive_policy() {
  static std::atomic<bool> adaptive{[] {
    const char* v = std::getenv("PORTA_THREAD_POLICY");
    return !(v && std::string(v) == "fixed");
  }()};
  return adaptive;
}
}  // namespace

void set_thread_policy_adaptive(bool adaptive) { adaptive_policy().store(adaptive, std::memory_order_relaxed); }

bool cores_oversubscribed() {
  if (!adaptive_policy().load(std::memory_order_relaxed)) return false;
  static std::atomic<int64_t> next_check_ns{0};
  static std::atomic<bool> busy{false};
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch()).count();
  if (now >= next_check_ns.load(std::memory_order_relaxed)) {
    next_check_ns.store(now + 250'000'000, std::memory_order_relaxed);  // 4 looks a second
    double load = 0;
    static const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (getloadavg(&load, 1) == 1) busy.store(load > cores + 1.0, std::memory_order_relaxed);
  }
  return busy.load(std::memory_order_relaxed);
}

namespace {
thread_local int budget_of_call = 0;  // 0 outside a cpu kernel call

// Sets the calling thread's budget for the duration of one kernel call (calls do not nest on
// one thread; a kernel calling another directly keeps the outer budget).
class BudgetScope {
 public:
  explicit BudgetScope(int threads) : saved_(budget_of_call) { budget_of_call = threads; }
  ~BudgetScope() { budget_of_call = saved_; }
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  int saved_;
};
}  // namespace

int call_thread_budget() {
  if (omp_in_parallel()) return 1;
  return budget_of_call > 0 ? budget_of_call : omp_get_max_threads();
}

int threads_for(size_t bytes, double flops) {
  if (omp_in_parallel()) return 1;
  if (bytes < parallel_min_bytes() && flops < parallel_min_flops()) return 1;
  if (cores_oversubscribed()) return 1;
  return omp_get_max_threads();
}

namespace {

// Floating-point work of a call from its op's flops function (0 when the op has none). The
// shape lists are thread-local and reassigned in place, so a call allocates nothing once warm.
double call_flops(const KernelContext& ctx) {
  if (!ctx.op || !ctx.op->flops || !ctx.attrs) return 0;
  thread_local std::vector<Shape> ins, outs;
  auto fill = [](std::vector<Shape>& into, const std::vector<Tensor>& from) {
    into.resize(from.size());
    for (size_t i = 0; i < from.size(); ++i) {
      if (from[i].defined()) into[i].assign(from[i].shape().begin(), from[i].shape().end());
      else into[i].clear();
    }
  };
  fill(ins, ctx.inputs);
  fill(outs, ctx.outputs);
  try {
    return ctx.op->flops(ins, outs, *ctx.attrs);
  } catch (...) {
    return 0;  // a flops function that cannot size this call: decide on bytes alone
  }
}

// call_flops, remembered per (op, attributes object, bytes): a session calls the same step
// with the same attributes object and sizes every run, and building the shape lists and
// calling the flops function was most of the policy's cost per call (mlp at 2 threads: about
// 2 us of CPU per inference more than at 1). A stale entry (an eager call reusing an
// attributes object's address with other shapes of the same byte count) can only cost a
// suboptimal thread count, never a wrong result.
double call_flops_memo(const KernelContext& ctx, size_t bytes) {
  struct Entry {
    const OpSchema* op = nullptr;
    const Attributes* attrs = nullptr;
    size_t bytes = 0;
    double flops = 0;
  };
  constexpr size_t kEntries = 256;
  thread_local Entry entries[kEntries];
  size_t h = (reinterpret_cast<uintptr_t>(ctx.attrs) >> 4) ^ (bytes * 0x9E3779B97F4A7C15ull);
  Entry& e = entries[(h ^ (h >> 29)) % kEntries];
  if (e.op != ctx.op || e.attrs != ctx.attrs || e.bytes != bytes) e = {ctx.op, ctx.attrs, bytes, call_flops(ctx)};
  return e.flops;
}

// A oneDNN exception that a kernel did not handle becomes porta's error naming the op: callers
// (and the C ABI) see one error family, never a library's own exception type.
void run_translating_onednn_errors(const KernelDef& kernel, KernelContext& ctx) {
  try {
    kernel.fn(ctx);
  } catch (const dnnl::error& e) {
    std::string what = str("[", ctx.op ? ctx.op->name : std::string("cpu kernel"), "] oneDNN failed (status ",
                           static_cast<int>(e.status), "): ", e.what());
    if (e.status == dnnl_out_of_memory) throw OutOfMemory(what);
    throw BackendError(what);
  }
}

// Every cpu kernel call runs under the thread count its size earns. The flops function is
// only consulted for calls small in bytes (large ones go parallel anyway) on a machine that
// is not oversubscribed (where every call runs on one thread).
void cpu_kernel_call(const KernelDef& kernel, KernelContext& ctx) {
  if (omp_get_max_threads() <= 1 || omp_in_parallel() || cores_oversubscribed()) {
    BudgetScope budget(1);
    ThreadScope scope(1);
    return run_translating_onednn_errors(kernel, ctx);
  }
  BudgetScope budget(omp_get_max_threads());
  size_t bytes = call_bytes(ctx);
  int threads = bytes >= parallel_min_bytes() ? threads_for(bytes) : threads_for(bytes, call_flops_memo(ctx, bytes));
  ThreadScope scope(threads);
  run_translating_onednn_errors(kernel, ctx);
}

const bool hook_installed = [] {
  detail::set_kernel_call_hook(DeviceType::cpu, &cpu_kernel_call);
  return true;
}();

}  // namespace

}  // namespace porta::cpu
