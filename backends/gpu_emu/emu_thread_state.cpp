// porta gpu_emu — the one definition of the per-thread launch state kernels read
// (emu_runtime.hpp), exported from libporta for plugins' emulator builds.
#include "backends/gpu_emu/emu_runtime.hpp"

namespace porta::porta_gpu_emu {

thread_local constinit uint3 threadIdx{0, 0, 0};
thread_local constinit uint3 blockIdx{0, 0, 0};
thread_local constinit dim3 blockDim, gridDim;
thread_local constinit int warpSize = 32;

namespace emu {
thread_local constinit unsigned char* dynamic_shared_memory = nullptr;
}  // namespace emu

}  // namespace porta::porta_gpu_emu
