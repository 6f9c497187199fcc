/* porta — calling a plugin's GPU builds from its C init (see porta/gpu_plugin.hpp).
 *
 * A .cu source of a plugin is compiled once per GPU build that porta_add_plugin makes; each
 * build defines its registration function with PORTA_GPU_REGISTER(name) as
 * porta_gpu_register_<name>_cuda / _hip / _gpu_emu. porta_add_plugin defines
 * PORTA_PLUGIN_WITH_CUDA, PORTA_PLUGIN_WITH_HIP and PORTA_PLUGIN_WITH_GPU_EMU (1 or 0) on
 * every source of the plugin for the builds it made, so the init, in C, writes:
 *
 *   PORTA_GPU_DECLARE(fused_leaky_relu)        (file scope)
 *   ...
 *   if ((s = porta_gpu_register_fused_leaky_relu(api)) != PORTA_OK) return s;   (in init)
 *
 * porta_gpu_register_<name> calls each build's function in the order cuda, hip, gpu_emu and
 * returns the first failure. (cuda and hip are kinds every porta knows, so their kernels
 * register even where porta has no such backend, and run the day it has one; a gpu_emu build
 * links libporta's emulator and loads only into a porta built with gpu_emu.)
 */
#ifndef PORTA_PLUGIN_GPU_H
#define PORTA_PLUGIN_GPU_H

#include "porta/plugin.h"

#ifndef PORTA_PLUGIN_WITH_CUDA
#define PORTA_PLUGIN_WITH_CUDA 0
#endif
#ifndef PORTA_PLUGIN_WITH_HIP
#define PORTA_PLUGIN_WITH_HIP 0
#endif
#ifndef PORTA_PLUGIN_WITH_GPU_EMU
#define PORTA_PLUGIN_WITH_GPU_EMU 0
#endif

#ifdef __cplusplus
#define PORTA_GPU_EXTERN_C_ extern "C"
#else
#define PORTA_GPU_EXTERN_C_ extern
#endif

#if PORTA_PLUGIN_WITH_CUDA
#define PORTA_GPU_DECLARE_CUDA_(name) \
  PORTA_GPU_EXTERN_C_ porta_status porta_gpu_register_##name##_cuda(const porta_plugin_api* api);
#define PORTA_GPU_CALL_CUDA_(name) \
  if (s == PORTA_OK) s = porta_gpu_register_##name##_cuda(api);
#else
#define PORTA_GPU_DECLARE_CUDA_(name)
#define PORTA_GPU_CALL_CUDA_(name)
#endif
#if PORTA_PLUGIN_WITH_HIP
#define PORTA_GPU_DECLARE_HIP_(name) \
  PORTA_GPU_EXTERN_C_ porta_status porta_gpu_register_##name##_hip(const porta_plugin_api* api);
#define PORTA_GPU_CALL_HIP_(name) \
  if (s == PORTA_OK) s = porta_gpu_register_##name##_hip(api);
#else
#define PORTA_GPU_DECLARE_HIP_(name)
#define PORTA_GPU_CALL_HIP_(name)
#endif
#if PORTA_PLUGIN_WITH_GPU_EMU
#define PORTA_GPU_DECLARE_GPU_EMU_(name) \
  PORTA_GPU_EXTERN_C_ porta_status porta_gpu_register_##name##_gpu_emu(const porta_plugin_api* api);
#define PORTA_GPU_CALL_GPU_EMU_(name) \
  if (s == PORTA_OK) s = porta_gpu_register_##name##_gpu_emu(api);
#else
#define PORTA_GPU_DECLARE_GPU_EMU_(name)
#define PORTA_GPU_CALL_GPU_EMU_(name)
#endif

/** Declares the GPU builds' functions of PORTA_GPU_REGISTER(name) and defines
 *  `static porta_status porta_gpu_register_<name>(const porta_plugin_api* api)` calling them. */
#define PORTA_GPU_DECLARE(name)                                                           \
  PORTA_GPU_DECLARE_CUDA_(name)                                                           \
  PORTA_GPU_DECLARE_HIP_(name)                                                            \
  PORTA_GPU_DECLARE_GPU_EMU_(name)                                                        \
  static porta_status porta_gpu_register_##name(const porta_plugin_api* api) {            \
    porta_status s = PORTA_OK;                                                            \
    (void)api;                                                                            \
    PORTA_GPU_CALL_CUDA_(name)                                                            \
    PORTA_GPU_CALL_HIP_(name)                                                             \
    PORTA_GPU_CALL_GPU_EMU_(name)                                                         \
    return s;                                                                             \
  }

#endif /* PORTA_PLUGIN_GPU_H */
