// porta gpu — static shared arrays that the SIMT emulator refills for every block.
//
//   PORTA_SHARED(float, tile, [64][65]);   declares  __shared__ float tile[64][65];
//
// Under nvcc and hipcc that is all it does. Under the emulator (backends/gpu_emu), where a
// static __shared__ array is one thread-local array that every block a cpu thread runs
// shares, the first thread of each block to pass the declaration fills the array with 0xFF
// (NaN in every float type): a read of an element the block never wrote shows NaN, not the
// previous block's value, which a GPU would not have kept either. A plain __shared__ works
// too, without that check.
#pragma once
#include <cstddef>

#include "kernels/cuda/gpu_kernel.hpp"

#if defined(PORTA_GPU_EMU)
namespace porta::porta_gpu_emu::emu {
/// Fills [p, p + bytes) with 0xFF the first time it is called for `p` in the running block.
void fresh_shared(void* p, size_t bytes);
}  // namespace porta::porta_gpu_emu::emu
#define PORTA_SHARED(T, name, extents) \
  __shared__ T name extents;           \
  ::porta::porta_gpu_emu::emu::fresh_shared(&name, sizeof(name))
#else
#define PORTA_SHARED(T, name, extents) __shared__ T name extents
#endif
