// porta gpu — the one header that lets a CUDA source build as HIP, and as plain C++.
//
// Every file under backends/cuda and kernels/cuda is compiled up to three times: by nvcc for
// the `cuda` backend, by hipcc (-DPORTA_HIP=1) for the `hip` backend, and by the host C++
// compiler (-DPORTA_GPU_EMU=1) for `gpu_emu`, the SIMT emulator that runs the kernels on the
// CPU (backends/gpu_emu). Sources spell the CUDA runtime names; under HIP this header maps
// each name they use to HIP's, under the emulator to backends/gpu_emu/emu_runtime.hpp. Add a
// mapping here when a source needs a new runtime name; never fork a kernel per vendor.
//
// It also gives each build its own identity, so the copies link into one libporta:
//   PORTA_GPU_NS           namespace of host and device symbols (porta_cuda / porta_hip /
//                          porta_gpu_emu)
//   PORTA_GPU_DEVICE_TYPE  DeviceType the backend and kernels register for
//   PORTA_GPU_NAME         "cuda" / "hip" / "gpu_emu", for messages
//   PORTA_GPU_PREFERENCE   Capabilities::preference ("auto" never picks the emulator)
//   PORTA_GPU_DEVICE_KIND  Capabilities::type
//
// Kernels launch through launch<kernel>(grid, block, shared_bytes, stream, args...), never
// with <<<>>>, so that the emulator sees every launch (and names the kernel in its errors).
#pragma once
#include <cstddef>

#if defined(PORTA_HIP)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#define PORTA_GPU_NS porta_hip
#define PORTA_GPU_DEVICE_TYPE (::porta::DeviceType::hip)
#define PORTA_GPU_PREFERENCE 200
#define PORTA_GPU_DEVICE_KIND "discrete"
#define PORTA_GPU_NAME "hip"
#define PORTA_GPU_RUNTIME "HIP"
#define PORTA_GPU_API "hip"  // prefix of runtime call names, for messages

// Types and constants.
#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaStream_t hipStream_t
#define cudaEvent_t hipEvent_t
#define cudaDeviceProp hipDeviceProp_t
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
// Runtime calls.
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaSetDevice hipSetDevice
#define cudaGetDevice hipGetDevice
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemsetAsync hipMemsetAsync
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaEventCreate hipEventCreate
#define cudaEventDestroy hipEventDestroy
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime

#elif defined(PORTA_GPU_EMU)
#include "backends/gpu_emu/emu_runtime.hpp"
#include "porta/device.hpp"

#define PORTA_GPU_NS porta_gpu_emu
#define PORTA_GPU_DEVICE_TYPE (::porta::register_device_type("gpu_emu"))
#define PORTA_GPU_PREFERENCE 0
#define PORTA_GPU_DEVICE_KIND "emulated"
#define PORTA_GPU_NAME "gpu_emu"
#define PORTA_GPU_RUNTIME "porta SIMT emulator"
#define PORTA_GPU_API "cuda"  // the emulator answers to the CUDA runtime's names

#else  // CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define PORTA_GPU_NS porta_cuda
#define PORTA_GPU_DEVICE_TYPE (::porta::DeviceType::cuda)
#define PORTA_GPU_PREFERENCE 300
#define PORTA_GPU_DEVICE_KIND "discrete"
#define PORTA_GPU_NAME "cuda"
#define PORTA_GPU_RUNTIME "CUDA"
#define PORTA_GPU_API "cuda"  // prefix of runtime call names, for messages
#endif

namespace porta::PORTA_GPU_NS {

/// Value of `v` held by lane (this lane XOR `offset`) of the same warp/wavefront.
template <typename T>
__device__ __forceinline__ T shuffle_xor(T v, int offset) {
#if defined(PORTA_HIP)
  return __shfl_xor(v, offset);
#elif defined(PORTA_GPU_EMU)
  return __shfl_xor_sync(0xffffffffffffffffull, v, offset);
#else
  return __shfl_xor_sync(0xffffffffu, v, offset);
#endif
}

/// Combines `v` over the threads of one warp/wavefront with `combine(a, b)`; every lane gets
/// the result. Works for any warpSize (32 on NVIDIA, 32 or 64 on AMD): the loop starts at
/// warpSize / 2.
template <typename T, typename Combine>
__device__ __forceinline__ T warp_reduce(T v, Combine combine) {
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) v = combine(v, shuffle_xor(v, offset));
  return v;
}

#if defined(PORTA_GPU_EMU)
/// "kernel<float, 4>" for a kernel given as a template argument (the emulator's messages).
template <auto Kernel>
const char* kernel_name() {
  static const std::string name = emu::kernel_name_from_signature(__PRETTY_FUNCTION__);
  return name.c_str();
}
#endif

/// Launches `Kernel` over `grid` x `block` threads with `shared_bytes` of dynamic shared
/// memory (dynamic_shared) on `stream`, with `args` converted to its parameters. Does not
/// wait; check with PORTA_GPU_CHECK_LAUNCH. The only way kernels are launched.
template <auto Kernel, typename... Args>
void launch(dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream, const Args&... args) {
#if defined(PORTA_GPU_EMU)
  auto run = [&] { Kernel(args...); };
  emu::launch(kernel_name<Kernel>(), grid, block, shared_bytes, stream,
              [](const void* f) { (*static_cast<const decltype(run)*>(f))(); }, &run);
#else
  Kernel<<<grid, block, shared_bytes, stream>>>(args...);
#endif
}

/// The block's dynamic shared memory (the launch's `shared_bytes`), as an array of T.
template <typename T>
__device__ __forceinline__ T* dynamic_shared() {
#if defined(PORTA_GPU_EMU)
  return reinterpret_cast<T*>(emu::dynamic_shared_memory);
#else
  extern __shared__ __align__(16) unsigned char porta_dynamic_shared_[];
  return reinterpret_cast<T*>(porta_dynamic_shared_);
#endif
}

}  // namespace porta::PORTA_GPU_NS
