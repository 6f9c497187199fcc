// porta cpu backend — host memory (64-byte aligned), memcpy copies, host timers.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <sys/mman.h>
#include <thread>

#include "backends/cpu/fma_probe.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/thread_policy.hpp"
#include "porta/backend.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"

namespace porta {
namespace {

size_t available_host_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

std::string read_cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "host CPU";
}

// Read once: backend_for() asks for availability on every allocation and call, and reading
// /proc/cpuinfo took a third of a small model's run time.
const std::string& cpu_model_name() {
  static const std::string name = read_cpu_model_name();
  return name;
}

class HostTimer final : public Timer {
 public:
  void start() override { t0_ = std::chrono::steady_clock::now(); }
  void stop() override { t1_ = std::chrono::steady_clock::now(); }
  double elapsed_us() override { return std::chrono::duration<double, std::micro>(t1_ - t0_).count(); }

 private:
  std::chrono::steady_clock::time_point t0_, t1_;
};

class CpuBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::cpu; }
  int device_count() const override { return 1; }
  Availability availability(int) const override { return {true, cpu_model_name()}; }
  Capabilities capabilities(int) const override {
    Capabilities c;
    c.name = cpu_model_name();
    c.type = "cpu";
    c.total_memory = available_host_bytes();
    c.dtypes = (1u << kNumDTypes) - 1;
    // bf16 dot products in hardware (AVX512_BF16; every AMX cpu has it too): oneDNN's bf16
    // matmul runs them. On other AVX-512 CPUs it emulates bf16, no faster than f32; below
    // AVX-512 it has no bf16 at all, and the kernels compute a bf16 session's products in f32.
    // Where the dot products run no faster than f32's fma (measured once: cpu::bf16_rate),
    // bf16 is no fast format either.
    if (!cpu::onednn_has_bf16()) {
      c.products_in_f32 = dtype_bit(DType::bf16);
      c.extra.emplace_back("bf16 products", "computed in f32 (oneDNN's bf16 needs AVX-512)");
    } else if (__builtin_cpu_supports("avx512bf16")) {
      const cpu::Bf16Rate& r = cpu::bf16_rate();
      const bool fast = cpu::bf16_faster(r);
      if (fast) c.fast_dtypes = dtype_bit(DType::bf16);
      c.extra.emplace_back("bf16 dot products",
                           str(static_cast<int>(r.bf16), " GFLOP/s on one core against f32 fma's ",
                               static_cast<int>(r.f32), fast ? ": auto computes products in bf16"
                                                             : ": auto keeps f32 (bf16 would be slower)"));
    }
    c.timestamps = false;
    c.extra.emplace_back("threads", std::to_string(std::thread::hardware_concurrency()));
    if (omp_get_max_threads() > 1)
      c.extra.emplace_back("parallel calls", str("from ", cpu::parallel_min_bytes() / 1024, " KiB or ",
                                                 cpu::parallel_min_flops() / 1e6, " MFLOP (a ", cpu::fork_join_us(),
                                                 " us fork/join here: thresholds x", cpu::parallel_scale(), ")"));
    return c;
  }
  void* allocate(int, size_t bytes) override {
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded == 0) rounded = 64;
    // Large buffers are 2 MiB aligned and advised for transparent huge pages: their first
    // touch then faults once per 2 MiB instead of once per 4 KiB (12x faster measured for a
    // fresh 64 MiB output on a kernel with THP in "madvise" mode).
    constexpr size_t kHuge = size_t{2} << 20;
    bool huge = rounded >= 4 * kHuge;
    if (huge) rounded = (rounded + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(huge ? kHuge : 64, rounded);
    if (p && huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
    if (!p)
      throw OutOfMemory(str("[cpu] out of memory: requested ", bytes, " bytes, about ",
                            available_host_bytes(), " bytes available"));
    return p;
  }
  void deallocate(int, void* handle, size_t) noexcept override { std::free(handle); }
  void copy_from_host(int, void* dst, size_t dst_offset, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(static_cast<char*>(dst) + dst_offset, src, bytes);
  }
  void copy_to_host(int, void* dst, const void* src, size_t src_offset, size_t bytes) override {
    if (bytes) std::memcpy(dst, static_cast<const char*>(src) + src_offset, bytes);
  }
  void copy_on_device(int, void* dst, size_t dst_offset, const void* src, size_t src_offset,
                      size_t bytes) override {
    if (bytes)
      std::memmove(static_cast<char*>(dst) + dst_offset, static_cast<const char*>(src) + src_offset, bytes);
  }
  void synchronize(int) override {}
  void* host_pointer(void* handle) const override { return handle; }
  std::unique_ptr<Timer> create_timer(int) override { return std::make_unique<HostTimer>(); }
  double measure_fma_gflops(int, DType dtype) override { return cpu::measure_fma_gflops(dtype); }
};

}  // namespace
}  // namespace porta

using porta::CpuBackend;
PORTA_REGISTER_BACKEND(CpuBackend)
