// porta gpu_emu — what the emulator's own files share (not seen by kernels).
#pragma once
#include <string>

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

}  // namespace porta::porta_gpu_emu::emu
