// porta — GPU kernels in plugins: one CUDA source (.cu) built three times into one plugin,
// by nvcc for `cuda`, by hipcc for `hip` (-DPORTA_HIP=1) and by the host C++ compiler for
// `gpu_emu`, the SIMT emulator that runs it on the cpu (-DPORTA_GPU_EMU=1). porta_add_plugin
// (porta's CMake package) does the three builds; docs/PLUGINS.md and examples/fused_leaky_relu
// show a whole plugin.
//
// Include it first in the .cu. It brings porta's compat header (installed as
// <prefix>/include/porta/gpu/backends/cuda/compat.hpp; the porta::gpu_plugin target adds its
// folder), which spells the CUDA runtime names under HIP and under the emulator, so that the
// same source compiles everywhere:
//   - write kernels as usual (__global__, threadIdx, blockIdx, __syncthreads, __shfl_xor_sync,
//     atomicAdd, dynamic shared memory through dynamic_shared<T>()); never assume warpSize 32;
//   - launch them with porta::gpu_plugin::launch<kernel>(api, "name", grid, block,
//     shared_bytes, stream, args...), never with <<<>>>: the emulator runs only launches it sees;
//   - give them porta's device addresses (api->tensor_device_pointer) and queue them on
//     porta's stream (api->kernel_stream), scratch from api->kernel_scratch;
//   - register the kernels in PORTA_GPU_REGISTER(name) { ... } with
//     porta_kernel_def.backend_name = PORTA_GPU_BACKEND, and call the builds' functions from
//     porta_plugin_init through PORTA_GPU_DECLARE / porta_gpu_register_<name> (porta/plugin_gpu.h).
// Put the kernels and helpers in an anonymous namespace: each build then has its own copies
// and the three link into one library.
//
// Under the emulator the kernels call libporta (the emulator runtime), so that build of a
// plugin links libporta; the cuda build links the CUDA runtime, the hip build libamdhip64.
#pragma once
#include <exception>
#include <string>

#include "backends/cuda/compat.hpp"
#include "porta/plugin_gpu.h"

// nvcc and hipcc know dim3, threadIdx, __syncthreads... as built-ins; under the emulator they
// live in porta's namespace for this build.
using namespace porta::PORTA_GPU_NS;

/// The device kind this compilation's kernels register for: "cuda", "hip" or "gpu_emu"
/// (porta_kernel_def.backend_name).
#define PORTA_GPU_BACKEND PORTA_GPU_NAME

#if defined(PORTA_HIP)
#define PORTA_GPU_REGISTER_SUFFIX_(name) name##_hip
#elif defined(PORTA_GPU_EMU)
#define PORTA_GPU_REGISTER_SUFFIX_(name) name##_gpu_emu
#else
#define PORTA_GPU_REGISTER_SUFFIX_(name) name##_cuda
#endif

/// Defines this build's registration function of the source's kernels, called by
/// porta_gpu_register_<name> (PORTA_GPU_DECLARE in porta/plugin_gpu.h) from the plugin's init:
///   PORTA_GPU_REGISTER(fused_leaky_relu) { ... return api->register_kernel(&def); }
/// `api` is the table porta passed to porta_plugin_init. Hidden: only the plugin calls it.
#define PORTA_GPU_REGISTER(name)                                                           \
  extern "C" __attribute__((visibility("hidden"))) porta_status PORTA_GPU_REGISTER_SUFFIX_( \
      porta_gpu_register_##name)(const porta_plugin_api* api)

namespace porta::gpu_plugin {

/// Launches `Kernel` over `grid` x `block` threads with `shared_bytes` of dynamic shared memory
/// on `stream` (porta_kernel_stream's), with `args` converted to its parameters, and checks
/// that it started. Returns PORTA_OK, or PORTA_ERROR_BACKEND after api->set_error with what the
/// runtime refused (a bad configuration) or, under the emulator, what the run found (a barrier
/// some threads never reached, a write outside an allocation), naming `name`. Does not wait.
template <auto Kernel, typename... Args>
porta_status launch(const porta_plugin_api* api, const char* name, dim3 grid, dim3 block, size_t shared_bytes,
                    void* stream, const Args&... args) {
#if defined(PORTA_GPU_EMU)
  try {
    porta::PORTA_GPU_NS::launch<Kernel>(grid, block, shared_bytes, static_cast<cudaStream_t>(stream), args...);
  } catch (const std::exception& e) {
    return api->set_error(PORTA_ERROR_BACKEND, e.what());
  }
  return PORTA_OK;
#else
  porta::PORTA_GPU_NS::launch<Kernel>(grid, block, shared_bytes, static_cast<cudaStream_t>(stream), args...);
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return PORTA_OK;
  std::string message = std::string("[" PORTA_GPU_NAME "] launch of ") + name + " failed: " +
                        cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  return api->set_error(PORTA_ERROR_BACKEND, message.c_str());
#endif
}

}  // namespace porta::gpu_plugin
