// porta gpu_emu — the runtime API the backend calls (devices, memory, streams, events, errors)
// and the fp16 conversions, answering to CUDA's names (emu_runtime.hpp).
//
// Device memory is host memory, and every allocation is a mapping of its own: its bytes end
// exactly where a PROT_NONE guard page begins, and another guard page sits below its first
// page. A kernel that reads or writes even one byte past the end faults; the fault handler of
// the launch (emu_launch.cpp) turns that into an error naming the kernel, the allocation and
// the offset. The allocation starts as far into its first page as its size leaves: that
// slack below the start (and, in the sanitizer build, a few bytes after the end) holds 0xFD,
// checked after every launch for writes. A read before the start is caught when it reaches
// the front guard page (at once for allocations of whole pages), and exactly in the sanitizer
// build, where everything around an allocation is poisoned for AddressSanitizer instead.
//
// The start is aligned to the largest power of two that divides the size, up to 256 (as
// cudaMalloc's): a tensor's pointer is then aligned to its element, all a kernel may assume
// of a view anyway. The memory handed out holds 0xFF, a NaN in every float dtype, so a
// kernel that leaves part of its output unwritten shows NaN (or -1) instead of a plausible
// stale value.
//
// The cost: at least one page of memory per allocation (4 KiB for a 4-byte scalar) and three
// kernel mappings (vm.max_map_count, 65530 by default, bounds the live allocations to about
// 20000), and an mmap/munmap per allocation: fine for tests, one reason it is not for speed.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "backends/gpu_emu/emu_internal.hpp"
#include "porta/util.hpp"

#if defined(PORTA_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace porta::porta_gpu_emu {
namespace emu {
namespace {

constexpr size_t kMaxAlignment = 256;
constexpr unsigned char kGuardByte = 0xfd, kFreshByte = 0xff;

size_t page_size() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

struct Allocation {
  unsigned char* mapping;  // start of the front guard page
  size_t mapping_bytes;    // guard page + data pages + guard page
  unsigned char* data;     // first data page
  size_t data_bytes;
  size_t bytes;            // what was asked for; the allocation is the map's key
  unsigned char* user() const { return data + front(); }
  size_t front() const { return data_bytes - bytes - tail; }  // slack bytes before the start
  size_t tail;                                               // slack bytes after the end
};

struct Memory {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> live;  // keyed by the address handed out
  size_t in_use = 0;
};
Memory& memory() {
  static Memory* m = new Memory;  // never destroyed: tensors may be freed during exit
  return *m;
}

thread_local int tls_device = 0;
thread_local cudaError_t tls_last_error = cudaSuccess;
thread_local cudaError_t tls_detail_error = cudaSuccess;
thread_local std::string tls_detail;

cudaError_t fail(cudaError_t err, std::string detail) {
  tls_last_error = err;
  tls_detail_error = err;
  tls_detail = std::move(detail);
  return err;
}

// The allocation holding [p, p + bytes), or nullptr with the reason in `why`.
const Allocation* find_range(const void* p, size_t bytes, const char* what, std::string& why) {
  auto addr = reinterpret_cast<uintptr_t>(p);
  Memory& m = memory();
  auto it = m.live.upper_bound(addr);
  if (it == m.live.begin()) {
    why = str(what, " ", p, " is not gpu_emu device memory");
    return nullptr;
  }
  --it;
  const Allocation& a = it->second;
  size_t offset = addr - it->first;
  if (offset > a.bytes || (offset == a.bytes && bytes > 0) || bytes > a.bytes - offset) {
    if (addr >= reinterpret_cast<uintptr_t>(a.mapping + a.mapping_bytes)) {
      why = str(what, " ", p, " is not gpu_emu device memory");
    } else {
      why = str(what, " range of ", bytes, " bytes at offset ", offset, " overruns its ",
                a.bytes, "-byte allocation");
    }
    return nullptr;
  }
  return &a;
}

// First and one-past-last offset (relative to `from`) of bytes that are not guard bytes.
bool changed_span(const unsigned char* from, size_t n, size_t& first, size_t& last) {
  static const auto* pattern = [] {
    auto* p = new unsigned char[4096];
    std::memset(p, kGuardByte, 4096);
    return p;
  }();
  bool intact = true;
  for (size_t at = 0; at < n && intact; at += 4096)
    intact = std::memcmp(from + at, pattern, std::min<size_t>(4096, n - at)) == 0;
  if (intact) return false;
  size_t i = 0;
  while (from[i] == kGuardByte) ++i;
  size_t j = n;
  while (from[j - 1] == kGuardByte) --j;
  first = i;
  last = j;
  return true;
}

}  // namespace

int current_device() { return tls_device; }

std::string check_guards() {
#if defined(PORTA_EMU_ASAN)
  return "";  // the slack is poisoned: AddressSanitizer reported any write to it already
#else
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  std::string report;
  for (auto& [addr, a] : m.live) {
    size_t first, last;
    unsigned char* user = a.user();
    const auto front = static_cast<int64_t>(a.front());
    if (changed_span(a.data, a.front(), first, last)) {
      if (report.empty())
        report = str("wrote before the start of a ", a.bytes, "-byte allocation: bytes ",
                     static_cast<int64_t>(first) - front, " to ", static_cast<int64_t>(last) - front,
                     " (exclusive) relative to its start changed");
      std::memset(a.data, kGuardByte, a.front());
    }
    if (changed_span(user + a.bytes, a.tail, first, last)) {
      if (report.empty())
        report = str("wrote past the end of a ", a.bytes, "-byte allocation: bytes ",
                     a.bytes + first, " to ", a.bytes + last, " (exclusive) changed");
      std::memset(user + a.bytes, kGuardByte, a.tail);
    }
  }
  return report;
#endif
}

std::string describe_fault(const void* address, const char* access) {
  const auto addr = reinterpret_cast<uintptr_t>(address);
  Memory& m = memory();
  std::lock_guard lock(m.mutex);
  for (const auto& [user, a] : m.live) {
    const auto lo = reinterpret_cast<uintptr_t>(a.mapping);
    if (addr < lo || addr >= lo + a.mapping_bytes) continue;
    if (addr >= user + a.bytes)
      return str(access, " past the end of a ", a.bytes, "-byte allocation: byte ", addr - user,
                 " from its start");
    if (addr < user)
      return str(access, " before the start of a ", a.bytes, "-byte allocation: byte -", user - addr,
                 " from its start");
    return str(access, " byte ", addr - user, " of a ", a.bytes,
               "-byte allocation, inside it (a fault there is an emulator bug)");
  }
  return str(access, " address ", address, ", which is not gpu_emu device memory");
}

}  // namespace emu

// ---- fp16 and exact double arithmetic ---------------------------------------------------------
__half __float2half_rn(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu))};
  if (ax >= 0x47800000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // overflow: inf
  if (ax >= 0x38800000u) {  // a normal half: rebias the exponent, round the 13 dropped bits
    uint32_t v = ax - 0x38000000u;
    v += 0xfffu + ((v >> 13) & 1u);  // to nearest, ties to even (a carry may reach inf)
    return {static_cast<uint16_t>(sign | (v >> 13))};
  }
  // Subnormal (or zero): the count of 2^-24 units, rounded to nearest even by the FPU.
  const float units = std::bit_cast<float>(ax) * 16777216.0f;  // exact: a power-of-two scale
  return {static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(units)))};
}

float __half2float(__half h) {
  const uint32_t sign = static_cast<uint32_t>(h.__x & 0x8000u) << 16;
  const uint32_t exponent = (h.__x >> 10) & 0x1fu, mantissa = h.__x & 0x3ffu;
  if (exponent == 0) {
    float v = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

double __dadd_rn(double a, double b) { return a + b; }
double __dmul_rn(double a, double b) { return a * b; }

// ---- errors ---------------------------------------------------------------------------------
const char* cudaGetErrorName(cudaError_t err) {
  switch (err) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t err) {
  if (err != cudaSuccess && err == emu::tls_detail_error && !emu::tls_detail.empty())
    return emu::tls_detail.c_str();
  switch (err) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  cudaError_t err = emu::tls_last_error;
  emu::tls_last_error = cudaSuccess;
  return err;
}

// ---- devices ----------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* count) {
  *count = emu::kDeviceCount;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device < 0 || device >= emu::kDeviceCount)
    return emu::fail(cudaErrorInvalidDevice, str("gpu_emu:", device, " does not exist"));
  *prop = cudaDeviceProp{};
  const int warp = emu::device_warp_size(device);
  std::string name = str("porta SIMT emulator, warp ", warp, warp == 32 ? " (as CUDA)" : " (as AMD wavefronts)",
                         ": runs the CUDA/HIP kernels on the CPU for correctness, not speed");
  std::snprintf(prop->name, sizeof(prop->name), "%s", name.c_str());
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  prop->totalGlobalMem = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->warpSize = warp;
  prop->maxThreadsPerBlock = 1024;
  // Few multiprocessors: grid-stride loops then take several turns even on small tensors.
  prop->multiProcessorCount = 2;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= emu::kDeviceCount)
    return emu::fail(cudaErrorInvalidDevice, str("gpu_emu:", device, " does not exist"));
  emu::tls_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = emu::tls_device;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = 0;
  return cudaSuccess;
}
cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 0;
  return cudaSuccess;
}

// ---- memory -----------------------------------------------------------------------------------
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  *ptr = nullptr;
  const size_t page = emu::page_size();
  // Alignment: the largest power of two dividing `bytes`, up to 256 (at least 8 under ASan,
  // whose shadow cannot poison the last bytes of a granule below an allocation's start).
  size_t align = bytes == 0 ? emu::kMaxAlignment : std::min(bytes & (~bytes + 1), emu::kMaxAlignment);
#if defined(PORTA_EMU_ASAN)
  align = std::max<size_t>(align, 8);
#endif
  const size_t tail = (align - bytes % align) % align;
  if (bytes > SIZE_MAX / 2)
    return emu::fail(cudaErrorMemoryAllocation, str("out of memory: ", bytes, " bytes requested"));
  const size_t data_bytes = std::max(page, (bytes + tail + page - 1) / page * page);
  const size_t mapping_bytes = data_bytes + 2 * page;
  void* map = mmap(nullptr, mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return emu::fail(cudaErrorMemoryAllocation,
                     str("out of memory: ", bytes, " bytes requested (mmap: ", std::strerror(errno), ")"));
  auto* mapping = static_cast<unsigned char*>(map);
  if (mprotect(mapping, page, PROT_NONE) != 0 || mprotect(mapping + page + data_bytes, page, PROT_NONE) != 0) {
    const int err = errno;
    munmap(map, mapping_bytes);
    return emu::fail(cudaErrorMemoryAllocation,
                     str("out of memory: ", bytes, " bytes requested (guard pages: ", std::strerror(err),
                         "; too many allocations for vm.max_map_count?)"));
  }
  emu::Allocation a{mapping, mapping_bytes, mapping + page, data_bytes, bytes, tail};
  unsigned char* user = a.user();
  std::memset(a.data, emu::kGuardByte, a.front());
  std::memset(user, emu::kFreshByte, bytes);
  std::memset(user + bytes, emu::kGuardByte, tail);
#if defined(PORTA_EMU_ASAN)
  ASAN_POISON_MEMORY_REGION(mapping, mapping_bytes);
  ASAN_UNPOISON_MEMORY_REGION(user, bytes);
#endif
  emu::Memory& m = emu::memory();
  std::lock_guard lock(m.mutex);
  m.live.emplace(reinterpret_cast<uintptr_t>(user), a);
  m.in_use += bytes;
  *ptr = user;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  emu::Memory& m = emu::memory();
  std::lock_guard lock(m.mutex);
  auto it = m.live.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == m.live.end())
    return emu::fail(cudaErrorInvalidValue, str("cudaFree of ", ptr, ", which is not an allocation"));
  m.in_use -= it->second.bytes;
#if defined(PORTA_EMU_ASAN)
  // The shadow outlives the mapping: a later mapping at the same address starts clean.
  ASAN_UNPOISON_MEMORY_REGION(it->second.mapping, it->second.mapping_bytes);
#endif
  munmap(it->second.mapping, it->second.mapping_bytes);
  m.live.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  emu::Memory& m = emu::memory();
  std::lock_guard lock(m.mutex);
  *total_bytes = prop.totalGlobalMem;
  *free_bytes = prop.totalGlobalMem > m.in_use ? prop.totalGlobalMem - m.in_use : 0;
  return cudaSuccess;
}

// Copies run at once (the emulator's streams are synchronous); device-side ranges are checked
// against their allocation.
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  if (bytes == 0) return cudaSuccess;
  {
    emu::Memory& m = emu::memory();
    std::lock_guard lock(m.mutex);
    std::string why;
    bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (dst_device && !emu::find_range(dst, bytes, "cudaMemcpyAsync destination", why))
      return emu::fail(cudaErrorInvalidValue, why);
    if (src_device && !emu::find_range(src, bytes, "cudaMemcpyAsync source", why))
      return emu::fail(cudaErrorInvalidValue, why);
  }
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) {
  if (bytes == 0) return cudaSuccess;
  {
    emu::Memory& m = emu::memory();
    std::lock_guard lock(m.mutex);
    std::string why;
    if (!emu::find_range(dst, bytes, "cudaMemsetAsync destination", why))
      return emu::fail(cudaErrorInvalidValue, why);
  }
  std::memset(dst, value, bytes);
  return cudaSuccess;
}

// ---- streams and events -----------------------------------------------------------------------
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  *stream = new emu::Stream{emu::tls_device};
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }

struct EmuEvent {
  std::chrono::steady_clock::time_point at{};
  bool recorded = false;
};
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new EmuEvent;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  event->at = std::chrono::steady_clock::now();
  event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  if (!start->recorded || !stop->recorded)
    return emu::fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event was never recorded");
  *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count();
  return cudaSuccess;
}

}  // namespace porta::porta_gpu_emu
