// porta gpu — what kernels and the backend share: checked runtime calls, the per-device
// stream, device facts. Compiled twice (CUDA and HIP) through compat.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "backends/cuda/compat.hpp"
#include "porta/error.hpp"

namespace porta::PORTA_GPU_NS {

/// Throws BackendError "[cuda] <call> failed on cuda:<device>: <name>: <text> (file:line)".
/// Clears the runtime's sticky last-error so the next call is not blamed for this one.
[[noreturn]] void throw_gpu_error(cudaError_t err, const char* call, int device, const char* file,
                                  int line);

/// Checks one runtime call. `device` is the index the call was made for (-1: none yet).
#define PORTA_GPU_CHECK(device, call)                                                   \
  do {                                                                                  \
    cudaError_t porta_gpu_err_ = (call);                                                \
    if (porta_gpu_err_ != cudaSuccess)                                                  \
      ::porta::PORTA_GPU_NS::throw_gpu_error(porta_gpu_err_, #call, (device), __FILE__, \
                                             __LINE__);                                 \
  } while (0)

/// Checks that the kernel launch just issued was accepted (does not wait for it);
/// `kernel_name` is a string literal naming the kernel in the error.
#define PORTA_GPU_CHECK_LAUNCH(device, kernel_name)                                     \
  do {                                                                                  \
    cudaError_t porta_gpu_err_ = cudaGetLastError();                                    \
    if (porta_gpu_err_ != cudaSuccess)                                                  \
      ::porta::PORTA_GPU_NS::throw_gpu_error(porta_gpu_err_, "launch of " kernel_name,  \
                                             (device), __FILE__, __LINE__);             \
  } while (0)

/// Facts about one device, read once.
struct DeviceInfo {
  int warp_size = 32;           ///< threads per warp / wavefront (never assume 32)
  int multiprocessors = 1;      ///< SMs / CUs
  int max_threads_per_block = 1024;
  size_t shared_memory_per_block = 48 * 1024;
  int major = 0, minor = 0;     ///< compute capability (CUDA) or gfx version (HIP)
};

/// Makes `device` current for this thread and returns its stream. All porta work of a device
/// runs in order on this one stream, so kernels need no events between them.
cudaStream_t stream(int device);
/// Facts about an available device (throws BackendUnavailable for an unusable one).
const DeviceInfo& device_info(int device);

/// A check a kernel makes on data it reads (Gather's indices, RNN sequence lengths) without
/// stopping the stream to ask the host: the first failing thread stores `id` and the bad
/// value in the device's record; the host raises the op's own error the next time it waits
/// for the stream (Backend::synchronize, copy_to_host, and end_batch at the end of a session
/// run). So no host synchronization happens inside a graph run for these checks.
struct DeferredCheck {
  unsigned long long* record = nullptr;  ///< [0] = id of the first failed check, [1] = value
  unsigned long long id = 0;             ///< 1-based
};

/// Registers a check for work about to be queued on `device`. `fail(value)` throws the error
/// the op raises for the bad `value` (e.g. opdef::check_gather_index with the call's shape).
DeferredCheck arm_deferred_check(int device, std::function<void(int64_t)> fail);

/// Waits for the stream when checks are armed and throws the first one that failed (the
/// record is cleared first). No-op, and no wait, when nothing was armed since the last call.
void raise_deferred_checks(int device);

/// The arithmetic-peak probe (kernels/cuda/fma_probe.cu; backends/fma_probe.hpp): each of a
/// block's `threads` runs `chains` f32 chains x <- fma(x, one, step) for `iters` steps from
/// c * start_unit and writes their sum (exact: 120 * start_unit + chains * iters * step).
struct FmaProbeShape {
  int iters;
  float one, step, start_unit;
  uint32_t threads;
  int chains;
};
FmaProbeShape fma_probe_shape();
/// Queues the probe on `device`'s stream: `blocks` blocks, one float per thread into `sums`.
void launch_fma_probe(int device, float* sums, uint32_t blocks);

/// Device side: records `value` as the failure of `check` unless an earlier one was recorded.
__device__ __forceinline__ void report_failed_check(DeferredCheck check, int64_t value) {
  if (atomicCAS(check.record, 0ull, check.id) == 0ull)
    check.record[1] = static_cast<unsigned long long>(value);
}

}  // namespace porta::PORTA_GPU_NS
