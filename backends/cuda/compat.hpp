// porta gpu — the one header that lets a CUDA source build as HIP.
//
// Every file under backends/cuda and kernels/cuda is compiled twice: by nvcc for the `cuda`
// backend and by hipcc (-DPORTA_HIP=1) for the `hip` backend. Sources spell the CUDA runtime
// names; under HIP this header maps each name they use to HIP's. Add a mapping here when a
// source needs a new runtime name; never fork a kernel per vendor.
//
// It also gives each build its own identity, so the two copies link into one libporta:
//   PORTA_GPU_NS       namespace of host and device symbols (porta_cuda / porta_hip)
//   PORTA_GPU_BACKEND  DeviceType token used to register kernels (cuda / hip)
//   PORTA_GPU_NAME     "cuda" / "hip", for messages
#pragma once

#if defined(PORTA_HIP)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

#define PORTA_GPU_NS porta_hip
#define PORTA_GPU_BACKEND hip
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

#else  // CUDA
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#define PORTA_GPU_NS porta_cuda
#define PORTA_GPU_BACKEND cuda
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

}  // namespace porta::PORTA_GPU_NS
