// porta gpu_emu — the SIMT emulator's side of backends/cuda/compat.hpp: what the kernels/cuda
// and backends/cuda sources see when they are compiled as plain C++ (-DPORTA_GPU_EMU=1).
//
// The CUDA programming model on the CPU: a launch runs its blocks across the cpu's threads;
// the threads of a block run as fibers on one cpu thread and switch only at __syncthreads and
// at warp collectives (shuffles, votes). Warps are 32 or 64 lanes wide, per device. Device
// memory is host memory, each allocation filled with 0xFF (a NaN in every float type) and
// ending against a guard page (emu_runtime.cpp). Errors a GPU would hang on or corrupt
// silently — a barrier some threads never reach, a shuffle across a missing lane, a read or
// write past an allocation — are raised as BackendError naming the kernel.
//
// Only included through compat.hpp. Everything lives in namespace porta::porta_gpu_emu (the
// emulator build's PORTA_GPU_NS), so the CUDA names here never collide with libcudart's.
#pragma once
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace porta::porta_gpu_emu {

// ---- launch geometry ------------------------------------------------------------------------
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// What a kernel reads about where it runs. Thread-local: the cpu thread running a block sets
// them, threadIdx before it resumes each of the block's fibers. Declared here and defined once
// in libporta (emu_thread_state.cpp), so that a plugin's kernels compiled for the emulator read
// the variables the emulator sets (an inline definition would give such a plugin its own copy
// wherever the dynamic linker does not unify them).
extern thread_local constinit uint3 threadIdx;
extern thread_local constinit uint3 blockIdx;
extern thread_local constinit dim3 blockDim, gridDim;
extern thread_local constinit int warpSize;

namespace emu {

/// The running block's dynamic shared memory (dynamic_shared in compat.hpp).
extern thread_local constinit unsigned char* dynamic_shared_memory;

/// Block-wide barrier of the calling emulated thread.
void sync_threads();

/// Warp exchange: lane L publishes `value` (up to 8 bytes) and asks for the value of lane
/// source(L); every lane of the warp must arrive. Returns the source lane's value.
enum class ShuffleKind { kXor, kIndex, kDown, kUp };
uint64_t shuffle(uint64_t value, ShuffleKind kind, int arg, int width, const char* op);
/// Warp vote: bit L set when lane L's predicate is true (lanes of the warp only).
uint64_t ballot(bool predicate, const char* op);

/// Runs `body` once per thread of a `grid` x `block` launch on the device of `stream`, then
/// checks every allocation's guard zones. Throws BackendError naming `kernel` on a bad
/// configuration, a barrier or collective not reached by every thread, or memory written
/// outside an allocation.
struct Stream;
void launch(const char* kernel, dim3 grid, dim3 block, size_t shared_bytes, Stream* stream,
            void (*body)(const void*), const void* closure);

/// The kernel's name from a template argument that is the kernel (GCC and clang spellings).
std::string kernel_name_from_signature(const char* pretty_function);

}  // namespace emu

// ---- half and bit-cast intrinsics -----------------------------------------------------------
/// IEEE binary16 storage, as CUDA's __half (conversions below, arithmetic in float).
struct __half {
  uint16_t __x;
};

__half __float2half_rn(float f);
float __half2float(__half h);

inline float __uint_as_float(unsigned v) { return std::bit_cast<float>(v); }
inline unsigned __float_as_uint(float v) { return std::bit_cast<unsigned>(v); }
// Kept out of line so the compiler cannot contract them into a fused multiply-add.
double __dadd_rn(double a, double b);
double __dmul_rn(double a, double b);

// ---- barriers, shuffles, votes ----------------------------------------------------------------
inline void __syncthreads() { emu::sync_threads(); }

template <typename T>
T emu_shuffle_(T v, emu::ShuffleKind kind, int arg, int width, const char* op) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>,
                "warp shuffles move values of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = emu::shuffle(bits, kind, arg, width, op);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}
// The mask is accepted and not checked: every lane of the warp must take part (as porta's
// kernels do), which the emulator checks instead.
template <typename T>
T __shfl_xor_sync(unsigned long long, T v, int lane_mask, int width = 0) {
  return emu_shuffle_(v, emu::ShuffleKind::kXor, lane_mask, width, "__shfl_xor_sync");
}
template <typename T>
T __shfl_sync(unsigned long long, T v, int src_lane, int width = 0) {
  return emu_shuffle_(v, emu::ShuffleKind::kIndex, src_lane, width, "__shfl_sync");
}
template <typename T>
T __shfl_down_sync(unsigned long long, T v, unsigned delta, int width = 0) {
  return emu_shuffle_(v, emu::ShuffleKind::kDown, static_cast<int>(delta), width, "__shfl_down_sync");
}
template <typename T>
T __shfl_up_sync(unsigned long long, T v, unsigned delta, int width = 0) {
  return emu_shuffle_(v, emu::ShuffleKind::kUp, static_cast<int>(delta), width, "__shfl_up_sync");
}
inline unsigned long long __ballot_sync(unsigned long long, int predicate) {
  return emu::ballot(predicate != 0, "__ballot_sync");
}
inline int __any_sync(unsigned long long, int predicate) {
  return emu::ballot(predicate != 0, "__any_sync") != 0;
}
inline int __all_sync(unsigned long long, int predicate) {
  return emu::ballot(predicate == 0, "__all_sync") == 0;
}

// ---- atomics (blocks run on several cpu threads at once) --------------------------------------
template <typename T>
T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}
template <typename T>
T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;  // the old value: `compare` is overwritten with it on failure
}
template <typename T>
T atomicMax(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (old < value && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}
template <typename T>
T atomicMin(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T old = ref.load();
  while (value < old && !ref.compare_exchange_weak(old, value)) {
  }
  return old;
}
template <typename T>
T atomicExch(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value);
}

// ---- the runtime API (the subset porta's backend and kernels call) ----------------------------
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
};
inline constexpr unsigned cudaStreamNonBlocking = 1;
using cudaStream_t = emu::Stream*;
struct EmuEvent;
using cudaEvent_t = EmuEvent*;

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int multiProcessorCount;
  int major, minor;
};

const char* cudaGetErrorString(cudaError_t err);
const char* cudaGetErrorName(cudaError_t err);
cudaError_t cudaGetLastError();
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDriverGetVersion(int* version);
cudaError_t cudaRuntimeGetVersion(int* version);
cudaError_t cudaMalloc(void** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = nullptr);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);

}  // namespace porta::porta_gpu_emu

// ---- declaration qualifiers -------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// A static in thread-local storage is per block: all threads of a block run on one cpu thread
// and a cpu thread runs one block at a time.
#define __shared__ static thread_local
