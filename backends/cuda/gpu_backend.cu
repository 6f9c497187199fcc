// porta gpu — the cuda / hip backend (one source, built once per vendor through compat.hpp).
//
// Nothing touches the vendor runtime while libporta loads: devices are probed on first use,
// so a machine without a GPU or driver loads porta silently and lists the device as
// unavailable with the runtime's own reason.
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cuda/gpu_allocator.hpp"
#include "backends/fma_probe.hpp"
#include "backends/cuda/gpu_runtime.hpp"
#include "porta/backend.hpp"
#include "porta/util.hpp"
#include "runtime/kernel_services.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

struct DeviceState {
  DeviceInfo info;
  std::string name;
  size_t total_memory = 0;
  std::string arch;  // "sm_90" / "gfx90a"
  std::unique_ptr<CachingAllocator> allocator;
  std::once_flag stream_once;
  cudaStream_t stream = nullptr;
  // Deferred checks (arm_deferred_check): the device record and the armed checks' errors.
  std::mutex check_mutex;
  unsigned long long* check_record = nullptr;  // 2 values, device memory, never freed
  std::vector<std::function<void(int64_t)>> checks;
};

// The low formats whose products the device runs faster than f32 (what `--precision auto`
// takes, bf16 first): CUDA from compute capability 8.0 (bf16 and f16 tensor cores; f16 alone
// from 7.0); AMD's gfx9 data-centre parts with matrix cores (gfx908 on: bf16 and f16) and
// f16 on other GPUs with packed f16 math (gfx9 and later). The emulator computes every format
// in f32 on the host, so none is faster there.
DTypeSet fast_dtypes(const DeviceState& d) {
  const DTypeSet both = dtype_bit(DType::bf16) | dtype_bit(DType::f16);
#if defined(PORTA_GPU_EMU)
  (void)d;
  (void)both;
  return 0;
#elif defined(PORTA_HIP)
  const std::string& a = d.arch;
  if (a.rfind("gfx908", 0) == 0 || a.rfind("gfx90a", 0) == 0 || a.rfind("gfx94", 0) == 0 || a.rfind("gfx95", 0) == 0)
    return both;
  return d.info.major >= 9 ? dtype_bit(DType::f16) : 0;
#else
  if (d.info.major >= 8) return both;
  return d.info.major >= 7 ? dtype_bit(DType::f16) : 0;
#endif
}

// What the runtime said when asked for devices, once per process.
struct Probe {
  std::string reason;  // empty when at least one device answered
  int runtime_version = 0, driver_version = 0;
  std::vector<std::unique_ptr<DeviceState>> devices;
};

const Probe& probe() {
  static Probe* p = [] {
    auto* r = new Probe;  // never destroyed: streams and blocks outlive static destruction
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    (void)cudaRuntimeGetVersion(&r->runtime_version);
    (void)cudaDriverGetVersion(&r->driver_version);
    if (err != cudaSuccess) {
      std::string text = cudaGetErrorString(err), name = cudaGetErrorName(err);
      r->reason = text == name ? str(text, " (" PORTA_GPU_API "GetDeviceCount)")
                               : str(text, " (" PORTA_GPU_API "GetDeviceCount: ", name, ")");
      (void)cudaGetLastError();
      return r;
    }
    if (count <= 0) {
      r->reason = "the " PORTA_GPU_RUNTIME " runtime reports no device";
      return r;
    }
    for (int i = 0; i < count; ++i) {
      auto d = std::make_unique<DeviceState>();
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
        d->name = prop.name;
        d->total_memory = prop.totalGlobalMem;
        d->info.warp_size = prop.warpSize;
        d->info.multiprocessors = prop.multiProcessorCount;
        d->info.max_threads_per_block = prop.maxThreadsPerBlock;
        d->info.shared_memory_per_block = prop.sharedMemPerBlock;
        d->info.major = prop.major;
        d->info.minor = prop.minor;
#if defined(PORTA_HIP)
        d->arch = prop.gcnArchName;
#elif defined(PORTA_GPU_EMU)
        d->arch = str("simt, warp ", prop.warpSize);
#else
        d->arch = str("sm_", prop.major, prop.minor);
#endif
      } else {
        (void)cudaGetLastError();
        d->name = str(PORTA_GPU_NAME ":", i, " (properties unreadable)");
      }
      d->allocator = std::make_unique<CachingAllocator>(i);
      r->devices.push_back(std::move(d));
    }
    return r;
  }();
  return *p;
}

std::string unusable_reason(int device) {
  const Probe& p = probe();
  if (!p.reason.empty()) return p.reason;
  if (device < 0 || device >= static_cast<int>(p.devices.size()))
    return str(PORTA_GPU_NAME ":", device, " does not exist (", p.devices.size(), " device",
               p.devices.size() == 1 ? "" : "s", " present)");
  return "";
}

DeviceState& state(int device) {
  std::string why = unusable_reason(device);
  if (!why.empty())
    throw BackendUnavailable(str("[" PORTA_GPU_NAME "] ", PORTA_GPU_NAME ":", device,
                                 " is unavailable: ", why));
  return *probe().devices[static_cast<size_t>(device)];
}

class GpuTimer final : public Timer {
 public:
  explicit GpuTimer(int device) : device_(device) {
    stream(device_);
    PORTA_GPU_CHECK(device_, cudaEventCreate(&start_));
    if (cudaError_t err = cudaEventCreate(&stop_); err != cudaSuccess) {
      (void)cudaEventDestroy(start_);
      throw_gpu_error(err, "cudaEventCreate", device_, __FILE__, __LINE__);
    }
  }
  ~GpuTimer() override {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }
  void start() override { PORTA_GPU_CHECK(device_, cudaEventRecord(start_, stream(device_))); }
  void stop() override { PORTA_GPU_CHECK(device_, cudaEventRecord(stop_, stream(device_))); }
  double elapsed_us() override {
    PORTA_GPU_CHECK(device_, cudaEventSynchronize(stop_));
    float ms = 0;
    PORTA_GPU_CHECK(device_, cudaEventElapsedTime(&ms, start_, stop_));
    return static_cast<double>(ms) * 1000.0;
  }

 private:
  int device_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

class GpuBackend final : public Backend {
 public:
  DeviceType type() const override { return PORTA_GPU_DEVICE_TYPE; }
  int device_count() const override {
    return std::max<int>(1, static_cast<int>(probe().devices.size()));
  }
  Availability availability(int index) const override {
    std::string why = unusable_reason(index);
    if (!why.empty()) return {false, why};
    return {true, probe().devices[static_cast<size_t>(index)]->name};
  }
  Capabilities capabilities(int index) const override {
    Capabilities c;
    const Probe& p = probe();
    c.extra.emplace_back("runtime version", std::to_string(p.runtime_version));
    c.extra.emplace_back("driver version", std::to_string(p.driver_version));
    if (!unusable_reason(index).empty()) {
      c.name = PORTA_GPU_RUNTIME " device (unavailable)";
      c.type = "unavailable";
      c.dtypes = 0;
      return c;
    }
    const DeviceState& d = *p.devices[static_cast<size_t>(index)];
    c.name = d.name;
    c.type = PORTA_GPU_DEVICE_KIND;
    c.total_memory = d.total_memory;
    c.dtypes = (1u << kNumDTypes) - 1;
    c.subgroup_size = d.info.warp_size;
    c.view_alignment = 256;  // what the runtime's allocations guarantee (vector loads assume less)
    c.timestamps = true;
    c.fast_dtypes = fast_dtypes(d);
    // "auto" prefers a CUDA device, then a HIP one, to any Vulkan device (100 and less), and
    // never picks the emulator (0).
    c.preference = PORTA_GPU_PREFERENCE;
    c.extra.emplace_back("arch", d.arch);
    c.extra.emplace_back("multiprocessors", std::to_string(d.info.multiprocessors));
    return c;
  }

  void* allocate(int index, size_t bytes) override { return state(index).allocator->allocate(bytes); }
  void deallocate(int index, void* handle, size_t) noexcept override {
    if (unusable_reason(index).empty()) state(index).allocator->deallocate(handle);
  }

  // Host copies wait for the stream: the caller's host buffer may be reused right after.
  void copy_from_host(int index, void* dst, size_t dst_offset, const void* src,
                      size_t bytes) override {
    if (!bytes) return;
    cudaStream_t s = stream(index);
    PORTA_GPU_CHECK(index, cudaMemcpyAsync(static_cast<char*>(dst) + dst_offset, src, bytes,
                                           cudaMemcpyHostToDevice, s));
    PORTA_GPU_CHECK(index, cudaStreamSynchronize(s));
  }
  void copy_to_host(int index, void* dst, const void* src, size_t src_offset,
                    size_t bytes) override {
    if (!bytes) return;
    cudaStream_t s = stream(index);
    PORTA_GPU_CHECK(index, cudaMemcpyAsync(dst, static_cast<const char*>(src) + src_offset, bytes,
                                           cudaMemcpyDeviceToHost, s));
    PORTA_GPU_CHECK(index, cudaStreamSynchronize(s));
    raise_deferred_checks(index);
  }
  // Stays on the stream: ordered with kernels, no host wait.
  void copy_on_device(int index, void* dst, size_t dst_offset, const void* src,
                      size_t src_offset, size_t bytes) override {
    if (!bytes) return;
    PORTA_GPU_CHECK(index, cudaMemcpyAsync(static_cast<char*>(dst) + dst_offset,
                                           static_cast<const char*>(src) + src_offset, bytes,
                                           cudaMemcpyDeviceToDevice, stream(index)));
  }
  void synchronize(int index) override {
    PORTA_GPU_CHECK(index, cudaStreamSynchronize(stream(index)));
    raise_deferred_checks(index);
  }
  // The end of a session run's work on this device: the one wait, when a kernel armed a
  // deferred check (Gather, LSTM/GRU sequence lengths); nothing otherwise.
  void end_batch(int index) override { raise_deferred_checks(index); }
  std::unique_ptr<Timer> create_timer(int index) override {
    return std::make_unique<GpuTimer>(index);
  }
  // f32 only: the probe's chains are fmaf (no half2/bf16 probe yet).
  double measure_fma_gflops(int index, DType dtype) override {
    if (dtype != DType::f32) return 0.0;
    const FmaProbeShape p = fma_probe_shape();
    constexpr uint64_t kMaxBlocks = 1u << 14;
    const size_t bytes = kMaxBlocks * p.threads * sizeof(float);
    void* sums = allocate(index, bytes);
    std::vector<float> host;
    const double expect = 120.0 * p.start_unit + static_cast<double>(p.chains) * p.iters * p.step;
    auto run = [&](uint64_t blocks) {
      GpuTimer timer(index);
      timer.start();
      launch_fma_probe(index, static_cast<float*>(sums), static_cast<uint32_t>(blocks));
      timer.stop();
      double s = timer.elapsed_us() * 1e-6;
      size_t n = blocks * p.threads;
      host.resize(n);
      copy_to_host(index, host.data(), sums, 0, n * sizeof(float));
      for (size_t i = 0; i < n; ++i)
        if (host[i] != static_cast<float>(expect))
          throw BackendError(str("[" PORTA_GPU_NAME "] ", PORTA_GPU_NAME ":", index, ": the f32 peak probe's thread ",
                                 i, " summed its chains to ", host[i], " where they must sum to ", expect,
                                 ": the device did not run the arithmetic it is timed for, so no ceiling is reported"));
      return probe::Run{2.0 * p.chains * p.iters * static_cast<double>(n), s};
    };
    double g = 0;
    try {
      g = probe::best_gflops(run, kMaxBlocks);
    } catch (...) {
      deallocate(index, sums, bytes);
      throw;
    }
    deallocate(index, sums, bytes);
    return g;
  }
};

}  // namespace

[[noreturn]] void throw_gpu_error(cudaError_t err, const char* call, int device, const char* file,
                                  int line) {
  (void)cudaGetLastError();  // clear the sticky error
  throw BackendError(str("[" PORTA_GPU_NAME "] ", call, " failed on " PORTA_GPU_NAME ":", device,
                         ": ", cudaGetErrorName(err), ": ", cudaGetErrorString(err), " (", file,
                         ":", line, ")"));
}

cudaStream_t stream(int device) {
  DeviceState& d = state(device);
  PORTA_GPU_CHECK(device, cudaSetDevice(device));
  std::call_once(d.stream_once, [&] {
    // Non-blocking: never implicitly ordered with the legacy default stream.
    PORTA_GPU_CHECK(device, cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking));
  });
  return d.stream;
}

const DeviceInfo& device_info(int device) { return state(device).info; }

DeferredCheck arm_deferred_check(int device, std::function<void(int64_t)> fail) {
  // Thousands armed without a wait (an eager loop that never reads back): check them now
  // rather than grow the list without bound.
  bool full;
  {
    std::lock_guard<std::mutex> lock(state(device).check_mutex);
    full = state(device).checks.size() >= 4096;
  }
  if (full) {
    PORTA_GPU_CHECK(device, cudaStreamSynchronize(stream(device)));
    raise_deferred_checks(device);
  }
  DeviceState& d = state(device);
  cudaStream_t s = stream(device);
  std::lock_guard<std::mutex> lock(d.check_mutex);
  if (!d.check_record) {
    void* p = nullptr;
    PORTA_GPU_CHECK(device, cudaMalloc(&p, 2 * sizeof(unsigned long long)));
    d.check_record = static_cast<unsigned long long*>(p);
    PORTA_GPU_CHECK(device, cudaMemsetAsync(d.check_record, 0, 2 * sizeof(unsigned long long), s));
  }
  d.checks.push_back(std::move(fail));
  return {d.check_record, static_cast<unsigned long long>(d.checks.size())};
}

void raise_deferred_checks(int device) {
  if (!unusable_reason(device).empty()) return;
  DeviceState& d = state(device);
  std::function<void(int64_t)> failed;
  unsigned long long record[2] = {0, 0};
  {
    std::lock_guard<std::mutex> lock(d.check_mutex);
    if (d.checks.empty()) return;
    cudaStream_t s = stream(device);
    PORTA_GPU_CHECK(device, cudaMemcpyAsync(record, d.check_record, sizeof(record),
                                            cudaMemcpyDeviceToHost, s));
    PORTA_GPU_CHECK(device, cudaStreamSynchronize(s));
    if (record[0] != 0) {
      if (record[0] <= d.checks.size()) failed = std::move(d.checks[record[0] - 1]);
      PORTA_GPU_CHECK(device, cudaMemsetAsync(d.check_record, 0, sizeof(record), s));
    }
    d.checks.clear();
  }
  if (failed) failed(static_cast<int64_t>(record[1]));
  if (record[0] != 0)  // a check without its error (cannot happen): still never silent
    throw BackendError(str("[" PORTA_GPU_NAME "] a kernel check failed on " PORTA_GPU_NAME ":",
                           device, " with value ", static_cast<int64_t>(record[1])));
}

}  // namespace porta::PORTA_GPU_NS

using porta::PORTA_GPU_NS::GpuBackend;
PORTA_REGISTER_BACKEND(GpuBackend)

// What plugins' kernels get through the C ABI (porta_kernel_stream, porta_tensor_device_pointer):
// the device's one stream, and the allocation's device address (a handle is the pointer
// cudaMalloc/hipMalloc/the emulator returned) plus the byte offset.
namespace {
void* porta_gpu_plugin_stream(int index) { return static_cast<void*>(porta::PORTA_GPU_NS::stream(index)); }
void* porta_gpu_plugin_pointer(void* handle, size_t byte_offset) {
  return static_cast<char*>(handle) + byte_offset;
}
// A plain function, not a lambda: hipcc (clang 15) mangles two namespace-scope initializer
// lambdas of one file alike (see PORTA_REGISTER_GPU_KERNEL_DEF).
bool install_porta_gpu_services() {
  static porta::detail::KernelServices services;
  services.stream = porta_gpu_plugin_stream;
  services.device_pointer = porta_gpu_plugin_pointer;
  porta::detail::install_kernel_services(PORTA_GPU_DEVICE_TYPE, &services);
  return true;
}
const bool porta_gpu_services_installed = install_porta_gpu_services();
}  // namespace
