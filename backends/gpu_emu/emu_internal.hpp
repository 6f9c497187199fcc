// porta gpu_emu — what the emulator's own files share (not seen by kernels).
#pragma once
#include <string>

// The sanitizer build: device memory outside an allocation is poisoned for AddressSanitizer,
// which reports a kernel's out-of-bounds access itself (no guard checks, no fault handler).
#if defined(__SANITIZE_ADDRESS__)
#define PORTA_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PORTA_EMU_ASAN 1
#endif
#endif

#include "backends/gpu_emu/emu_runtime.hpp"

namespace porta::porta_gpu_emu::emu {

/// Emulated devices: index 0 has 32-lane warps (CUDA), index 1 64-lane ones (AMD wavefronts).
inline constexpr int kDeviceCount = 2;
inline int device_warp_size(int device) { return device == 1 ? 64 : 32; }

/// A stream: work runs when it is issued, so a stream only remembers its device.
struct Stream {
  int device = 0;
};

/// The calling thread's device (cudaSetDevice).
int current_device();

/// Checks the guard zones of every allocation; "" when intact, else which allocation was
/// written outside its bounds (the guards are restored, so it is reported once).
std::string check_guards();

/// kernels/cuda/shared_memory.cuh's PORTA_SHARED: fills the array with 0xFF once per block.
void fresh_shared(void* p, size_t bytes);

/// What a kernel did when it faulted at `address`: which allocation it read or wrote outside
/// of (past its end or before its start, at which byte offset), or that the address is not
/// device memory. `access` is "read", "wrote" or "accessed" (the kind is not always known).
std::string describe_fault(const void* address, const char* access);

}  // namespace porta::porta_gpu_emu::emu
