// porta gpu_emu — kernel launches: blocks across the cpu's threads, the threads of a block as
// fibers that meet at barriers and warp collectives (emu_runtime.hpp).
#include <omp.h>
#include <signal.h>
#include <ucontext.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/gpu_emu/emu_internal.hpp"
#include "backends/gpu_emu/fiber.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

// Faults in a kernel (an access to a guard page, or to memory that is not mapped at all)
// become launch errors where the fault handler can move a fiber off its faulting instruction.
// The sanitizer build leaves faults to AddressSanitizer, which finds the access first anyway.
#if !defined(PORTA_EMU_ASAN) && defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define PORTA_EMU_FAULTS 1
#endif

namespace porta::porta_gpu_emu::emu {
namespace {

// CUDA's limits (HIP's are the same or larger), so a launch the emulator accepts is one a GPU
// accepts too.
constexpr unsigned kMaxThreadsPerBlock = 1024, kMaxBlockZ = 64, kMaxGridYZ = 65535;
constexpr unsigned kMaxGridX = 2147483647u;
constexpr size_t kMaxDynamicShared = 48 * 1024;
// Kernels keep little on their stacks; 256 KiB of address space (touched pages only) leaves
// room for the sanitizer build's larger frames.
constexpr size_t kFiberStack = 256 * 1024;
// Emulated threads in a launch from which its blocks are spread over the cpu's threads.
constexpr int64_t kParallelThreads = 1 << 16;

enum class Wait { kReady, kBarrier, kCollective, kDone, kFaulted };

// A warp collective one lane is waiting in.
struct Collective {
  const char* op = nullptr;
  bool is_ballot = false;
  ShuffleKind kind = ShuffleKind::kXor;
  int arg = 0, width = 0;
  uint64_t value = 0;
  uint64_t result = 0;
};

struct Lane {
  uint3 thread_idx{0, 0, 0};
  Wait wait = Wait::kReady;
  Collective collective;
};

// One per cpu thread that runs blocks: the fibers of the block it runs (created on demand,
// kept for the next block), and the block's state.
struct Worker {
  std::vector<std::unique_ptr<Fiber>> fibers;
  std::vector<bool> needs_reset;  // abandoned mid-kernel by a failed block
  std::vector<Lane> lanes;
  std::vector<unsigned char> dynamic_shared;
  int warp_size = 32;
  int threads = 0;
  int current = -1;
  void (*body)(const void*) = nullptr;
  const void* closure = nullptr;
  // Set by the fault handler for the faulted lane (kFaulted): the address and the access.
  // fresh_shared: the block being run (a count per worker) and the arrays refilled for it.
  uint64_t block_serial = 0;
  std::vector<std::pair<void*, uint64_t>> fresh_arrays;
  const void* fault_address = nullptr;
  const char* fault_access = "accessed";
};

thread_local Worker* tls_worker = nullptr;

Worker& worker() {
  thread_local Worker w;
  return w;
}

void lane_main(void* arg) {
  Worker& w = *static_cast<Worker*>(arg);
  for (;;) {  // one kernel run per block; the fiber is kept for the next block
    w.body(w.closure);
    w.lanes[static_cast<size_t>(w.current)].wait = Wait::kDone;
    w.fibers[static_cast<size_t>(w.current)]->suspend();
  }
}

// The running lane: suspends it in `wait` until the scheduler makes it ready again.
Lane& running_lane(const char* op) {
  Worker* w = tls_worker;
  if (!w || w->current < 0)
    throw BackendError(str("[gpu_emu] ", op, " called outside a kernel launched on gpu_emu"));
  return w->lanes[static_cast<size_t>(w->current)];
}

void block_on(Worker& w, Lane& lane, Wait wait) {
  lane.wait = wait;
  w.fibers[static_cast<size_t>(w.current)]->suspend();
}

#if defined(PORTA_EMU_FAULTS)
// Where the fault handler sends a faulted fiber: it marks its lane and hands the cpu back to
// the block's scheduler, which reports the fault and never resumes it (the fiber is reset
// before its next use, like a fiber abandoned in a deadlock).
[[noreturn]] void leave_faulted_fiber() {
  Worker& w = *tls_worker;
  w.lanes[static_cast<size_t>(w.current)].wait = Wait::kFaulted;
  w.fibers[static_cast<size_t>(w.current)]->suspend();
  std::abort();  // never resumed
}

struct sigaction previous_segv, previous_bus;

// SIGSEGV/SIGBUS: when the faulting stack is the running fiber's, the fault is a kernel's:
// note it and return into leave_faulted_fiber (on the fiber's own stack, below the red zone)
// instead of the faulting instruction. Anything else goes to the handler that was there
// before (or the default action: the process dies as it would have).
void on_fault(int sig, siginfo_t* info, void* context) {
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  auto sp = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#else
  auto sp = static_cast<uintptr_t>(uc->uc_mcontext.sp);
#endif
  Worker* w = tls_worker;
  if (w && w->current >= 0 && static_cast<size_t>(w->current) < w->fibers.size() &&
      w->fibers[static_cast<size_t>(w->current)]->on_stack(reinterpret_cast<void*>(sp))) {
    w->fault_address = info->si_addr;
    sp = (sp - 512) & ~uintptr_t{15};
#if defined(__x86_64__)
    // Bit 1 of the page-fault error code: the access was a write.
    w->fault_access = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? "wrote" : "read";
    uc->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp - 8);  // as after a call
    uc->uc_mcontext.gregs[REG_RIP] = reinterpret_cast<greg_t>(&leave_faulted_fiber);
#else
    w->fault_access = "accessed";
    uc->uc_mcontext.sp = sp;
    uc->uc_mcontext.pc = reinterpret_cast<uintptr_t>(&leave_faulted_fiber);
#endif
    return;
  }
  const struct sigaction& previous = sig == SIGBUS ? previous_bus : previous_segv;
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
    previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  } else {
    signal(sig, SIG_DFL);  // the faulting instruction runs again and ends the process
  }
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = &on_fault;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
    sigaction(SIGBUS, &action, &previous_bus);
  });
}
#endif

std::string thread_ranges(const std::vector<int>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? std::to_string(ids[i]) : str(ids[i], "-", ids[j]);
    i = j + 1;
  }
  return out;
}

// Completes the collective all lanes [lo, hi) of one warp wait in; "" or the rule broken.
std::string resolve_warp(Worker& w, int lo, int hi) {
  const int warp_size = w.warp_size;
  const Collective& first = w.lanes[static_cast<size_t>(lo)].collective;
  for (int l = lo; l < hi; ++l) {
    const Collective& c = w.lanes[static_cast<size_t>(l)].collective;
    if (c.op != first.op || c.arg != first.arg || c.width != first.width)
      return str("the lanes of warp ", lo / warp_size, " meet in different collectives: lane 0 in ",
                 first.op, "(", first.arg, "), lane ", l - lo, " in ", c.op, "(", c.arg,
                 ") (on a GPU: undefined results)");
  }
  if (first.is_ballot) {
    uint64_t bits = 0;
    for (int l = lo; l < hi; ++l)
      if (w.lanes[static_cast<size_t>(l)].collective.value) bits |= uint64_t{1} << (l - lo);
    for (int l = lo; l < hi; ++l) w.lanes[static_cast<size_t>(l)].collective.result = bits;
    return "";
  }
  const int width = first.width == 0 ? warp_size : first.width;
  if (width <= 0 || width > warp_size || (width & (width - 1)) != 0)
    return str(first.op, ": width ", first.width, " is not a power of two up to the warp size ",
               warp_size);
  if (first.kind == ShuffleKind::kXor && (first.arg < 0 || first.arg >= width))
    return str(first.op, ": lane mask ", first.arg, " reaches past the ", width,
               "-lane warp (code written for a wider warp?)");
  for (int l = lo; l < hi; ++l) {
    const int lane = l - lo, base = lane / width * width, in_segment = lane % width;
    int src = lane;
    switch (first.kind) {
      case ShuffleKind::kXor: src = base + ((in_segment ^ first.arg) & (width - 1)); break;
      case ShuffleKind::kIndex: src = base + ((first.arg % width) + width) % width; break;
      case ShuffleKind::kDown: src = in_segment + first.arg < width ? lane + first.arg : lane; break;
      case ShuffleKind::kUp: src = in_segment >= first.arg ? lane - first.arg : lane; break;
    }
    if (lo + src >= hi)
      return str(first.op, "(", first.arg, "): lane ", lane, " of warp ", lo / warp_size,
                 " reads lane ", src, ", which does not exist (the block has ",
                 w.lanes.size(), " threads: its last warp is partial)");
    w.lanes[static_cast<size_t>(l)].collective.result =
        w.lanes[static_cast<size_t>(lo + src)].collective.value;
  }
  return "";
}

// Runs the threads of one block to completion; "" or what went wrong.
//
// Between two barriers the threads run one after the other, in ascending order on one pass
// and descending on the next, the first pass's direction alternating between neighbouring
// blocks and between the two devices (any order is a schedule a GPU may choose): a load that
// misses a barrier then reads stale data in one of the orders whichever thread stored it,
// instead of always seeing the stores of lower-numbered threads.
std::string run_block(Worker& w, int n) {
  const int warp_size = w.warp_size;
  const unsigned first = blockIdx.x + blockIdx.y + blockIdx.z + (warp_size == 64 ? 1u : 0u);
  for (unsigned pass = first;; ++pass) {
    for (int i = 0; i < n; ++i) {
      const int t = pass % 2 == 0 ? i : n - 1 - i;
      Lane& lane = w.lanes[static_cast<size_t>(t)];
      if (lane.wait != Wait::kReady) continue;
      w.current = t;
      threadIdx = lane.thread_idx;
      w.fibers[static_cast<size_t>(t)]->resume();
      if (lane.wait == Wait::kFaulted) {
        const uint3 i = lane.thread_idx;
        return str("thread (", i.x, ",", i.y, ",", i.z, ") ",
                   describe_fault(w.fault_address, w.fault_access));
      }
    }
    // Every thread is waiting or done: complete whole warps' collectives first.
    bool progressed = false;
    for (int lo = 0; lo < n; lo += warp_size) {
      const int hi = std::min(n, lo + warp_size);
      int collective = 0;
      for (int l = lo; l < hi; ++l) collective += w.lanes[static_cast<size_t>(l)].wait == Wait::kCollective;
      if (collective != hi - lo) continue;
      std::string why = resolve_warp(w, lo, hi);
      if (!why.empty()) return why;
      for (int l = lo; l < hi; ++l) w.lanes[static_cast<size_t>(l)].wait = Wait::kReady;
      progressed = true;
    }
    if (progressed) continue;
    std::vector<int> at_barrier, in_collective, done;
    for (int t = 0; t < n; ++t) {
      Wait s = w.lanes[static_cast<size_t>(t)].wait;
      if (s == Wait::kBarrier) at_barrier.push_back(t);
      else if (s == Wait::kCollective) in_collective.push_back(t);
      else if (s == Wait::kDone) done.push_back(t);
    }
    if (static_cast<int>(done.size()) == n) return "";
    if (static_cast<int>(at_barrier.size()) == n) {  // everyone at __syncthreads: release
      for (int t = 0; t < n; ++t) w.lanes[static_cast<size_t>(t)].wait = Wait::kReady;
      continue;
    }
    // A deadlock on a GPU (or undefined behaviour): say who waits where.
    std::string msg = "deadlock:";
    if (!at_barrier.empty())
      msg += str(" threads ", thread_ranges(at_barrier), " wait at __syncthreads;");
    if (!in_collective.empty()) {
      const Collective& c = w.lanes[static_cast<size_t>(in_collective.front())].collective;
      msg += str(" threads ", thread_ranges(in_collective), " wait in a warp collective (",
                 c.op, ") that other lanes of their warp never reach;");
    }
    if (!done.empty()) msg += str(" threads ", thread_ranges(done), " have exited;");
    msg += " a barrier or warp collective must be reached by every thread of the block (warp)";
    return msg;
  }
}

std::string dims(dim3 d) { return str(d.x, "x", d.y, "x", d.z); }

// PORTA_GPU_EMU_KERNEL_LOG=<file>: the names of the kernels launched (and their warp widths)
// are appended to <file> when the process exits, one per line, so a test run can show which
// kernels/cuda kernels it executed.
class KernelLog {
 public:
  static KernelLog& get() {
    static KernelLog* log = new KernelLog;  // written by atexit, never destroyed
    return *log;
  }
  void note(const char* kernel, int warp_size) {
    if (path_.empty()) return;
    std::lock_guard lock(mutex_);
    seen_.insert(str(kernel, " warp ", warp_size));
  }

 private:
  KernelLog() {
    if (const char* p = std::getenv("PORTA_GPU_EMU_KERNEL_LOG"); p && *p) {
      path_ = p;
      std::atexit([] { get().write(); });
    }
  }
  void write() {
    std::lock_guard lock(mutex_);
    if (FILE* f = std::fopen(path_.c_str(), "a")) {
      for (const std::string& s : seen_) std::fprintf(f, "%s\n", s.c_str());
      std::fclose(f);
    }
  }
  std::string path_;
  std::mutex mutex_;
  std::set<std::string> seen_;
};

}  // namespace

void sync_threads() {
  Worker& w = *tls_worker;
  block_on(w, running_lane("__syncthreads"), Wait::kBarrier);
}

void fresh_shared(void* p, size_t bytes) {
  Worker* w = tls_worker;
  if (!w || w->current < 0)
    throw BackendError("[gpu_emu] a PORTA_SHARED array declared outside a kernel launched on gpu_emu");
  for (auto& [array, serial] : w->fresh_arrays) {
    if (array != p) continue;
    if (serial != w->block_serial) {
      serial = w->block_serial;
      std::memset(p, 0xff, bytes);
    }
    return;
  }
  w->fresh_arrays.emplace_back(p, w->block_serial);
  std::memset(p, 0xff, bytes);
}

uint64_t shuffle(uint64_t value, ShuffleKind kind, int arg, int width, const char* op) {
  Worker& w = *tls_worker;
  Lane& lane = running_lane(op);
  lane.collective = Collective{op, false, kind, arg, width, value, 0};
  block_on(w, lane, Wait::kCollective);
  return lane.collective.result;
}

uint64_t ballot(bool predicate, const char* op) {
  Worker& w = *tls_worker;
  Lane& lane = running_lane(op);
  lane.collective = Collective{op, true, ShuffleKind::kXor, 0, 0, predicate ? 1u : 0u, 0};
  block_on(w, lane, Wait::kCollective);
  return lane.collective.result;
}

void launch(const char* kernel, dim3 grid, dim3 block, size_t shared_bytes, Stream* stream,
            void (*body)(const void*), const void* closure) {
  const int device = stream ? stream->device : current_device();
  const int warp_size = device_warp_size(device);
  auto fail = [&](const std::string& why) {
    throw BackendError(str("[gpu_emu] kernel ", kernel, " on gpu_emu:", device, " (grid ",
                           dims(grid), ", block ", dims(block), ", warp ", warp_size, "): ", why));
  };
  const uint64_t threads = uint64_t{block.x} * block.y * block.z;
  if (threads == 0 || grid.x == 0 || grid.y == 0 || grid.z == 0)
    fail("invalid configuration: every grid and block dimension must be at least 1");
  if (threads > kMaxThreadsPerBlock || block.z > kMaxBlockZ)
    fail(str("invalid configuration: a block takes at most ", kMaxThreadsPerBlock,
             " threads and z <= ", kMaxBlockZ, ", got ", threads, " threads"));
  if (grid.x > kMaxGridX || grid.y > kMaxGridYZ || grid.z > kMaxGridYZ)
    fail(str("invalid configuration: grid dimensions are limited to ", kMaxGridX, "x",
             kMaxGridYZ, "x", kMaxGridYZ));
  if (shared_bytes > kMaxDynamicShared)
    fail(str("invalid configuration: ", shared_bytes, " bytes of dynamic shared memory, limit ",
             kMaxDynamicShared));
  KernelLog::get().note(kernel, warp_size);
#if defined(PORTA_EMU_FAULTS)
  install_fault_handler();
#endif
  const int n = static_cast<int>(threads);
  const int64_t blocks = int64_t{grid.x} * grid.y * grid.z;
  std::mutex error_mutex;
  std::string error;
  std::atomic<bool> failed{false};
  auto run_blocks = [&](int64_t first, int64_t step) {
    Worker& w = worker();
    tls_worker = &w;
    w.body = body;
    w.closure = closure;
    w.warp_size = warp_size;
    w.threads = n;
    blockDim = block;
    gridDim = grid;
    warpSize = warp_size;
    w.dynamic_shared.assign(std::max<size_t>(shared_bytes, 1), 0xff);
    emu::dynamic_shared_memory = w.dynamic_shared.data();
    while (w.fibers.size() < static_cast<size_t>(n)) {
      w.fibers.push_back(std::make_unique<Fiber>(kFiberStack));
      w.fibers.back()->reset(&lane_main, &w);
      w.needs_reset.push_back(false);
    }
    w.lanes.assign(static_cast<size_t>(n), Lane{});
    for (int t = 0; t < n; ++t) {
      unsigned u = static_cast<unsigned>(t);
      w.lanes[static_cast<size_t>(t)].thread_idx = {u % block.x, u / block.x % block.y,
                                                          u / (block.x * block.y)};
    }
    for (int64_t b = first; b < blocks && !failed.load(std::memory_order_relaxed); b += step) {
      const uint64_t ub = static_cast<uint64_t>(b);
      blockIdx = {static_cast<unsigned>(ub % grid.x),
                           static_cast<unsigned>(ub / grid.x % grid.y),
                           static_cast<unsigned>(ub / (uint64_t{grid.x} * grid.y))};
      if (shared_bytes) std::fill(w.dynamic_shared.begin(), w.dynamic_shared.end(), 0xff);
      ++w.block_serial;  // PORTA_SHARED arrays are refilled when the block first reaches them
      for (int t = 0; t < n; ++t) {
        Lane& lane = w.lanes[static_cast<size_t>(t)];
        lane.wait = Wait::kReady;
        if (w.needs_reset[static_cast<size_t>(t)]) {
          w.fibers[static_cast<size_t>(t)]->reset(&lane_main, &w);
          w.needs_reset[static_cast<size_t>(t)] = false;
        }
      }
      std::string why = run_block(w, n);
      if (!why.empty()) {
        for (int t = 0; t < n; ++t)
          if (w.lanes[static_cast<size_t>(t)].wait != Wait::kDone)
            w.needs_reset[static_cast<size_t>(t)] = true;
        std::lock_guard lock(error_mutex);
        if (!failed.exchange(true))
          error = str("block (", blockIdx.x, ",", blockIdx.y, ",", blockIdx.z, "): ", why);
      }
    }
    w.current = -1;
    tls_worker = nullptr;
  };
  if (tls_worker && tls_worker->current >= 0)
    fail("launched from inside a running kernel (dynamic parallelism is not emulated)");
  // Small launches run on the calling thread: an OpenMP team costs more than it saves there
  // (its threads spin between regions, which on a small machine takes the cpu from the work).
  const int64_t total_threads = blocks * n;
  const int workers = total_threads < kParallelThreads
                          ? 1
                          : static_cast<int>(std::min<int64_t>(blocks, omp_get_max_threads()));
  if (workers <= 1) {
    run_blocks(0, 1);
  } else {
#pragma omp parallel num_threads(workers)
    run_blocks(omp_get_thread_num(), omp_get_num_threads());
  }
  if (failed) fail(error);
  std::string corrupt = check_guards();
  if (!corrupt.empty()) fail(corrupt);
}

std::string kernel_name_from_signature(const char* pretty_function) {
  std::string s = pretty_function;
  size_t at = s.find("Kernel = ");
  if (at == std::string::npos) return s;
  at += 9;
  size_t end = s.find_first_of(";]", at);
  std::string name = s.substr(at, end == std::string::npos ? std::string::npos : end - at);
  if (!name.empty() && name[0] == '&') name.erase(0, 1);
  for (const char* prefix : {"porta::porta_gpu_emu::(anonymous namespace)::",
                             "porta::porta_gpu_emu::{anonymous}::", "porta::porta_gpu_emu::"}) {
    for (size_t p; (p = name.find(prefix)) != std::string::npos;) name.erase(p, std::strlen(prefix));
  }
  return name;
}

}  // namespace porta::porta_gpu_emu::emu
