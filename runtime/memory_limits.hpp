// porta runtime — allocation accounting, per-device memory limits and fault injection.
//
// PORTA_MEMORY_LIMIT=cpu:2GiB,vulkan:0:512MiB caps the bytes live on a device;
// PORTA_FAULT_ALLOC=N makes the N-th allocation (counting from 1) fail with OutOfMemory.
#pragma once
#include <cstddef>

#include "porta/device.hpp"

namespace porta::detail {

/// Throws OutOfMemory when the allocation would break a limit or is the injected fault;
/// otherwise records it as live.
void check_allocation(Device device, size_t bytes);
/// For a backend's own allocations that hold no tensor (Vulkan staging buffers and
/// suballocator blocks): counts towards PORTA_FAULT_ALLOC and throws OutOfMemory naming `what`
/// when it is the injected fault; not counted against limits (the tensors carved from a block
/// already are).
void check_fault(Device device, size_t bytes, const char* what);
/// Allocations counted (check_allocation + check_fault) since the fault counter was last set.
long allocation_count();
/// Records that a checked allocation failed in the backend (undoes the accounting).
void note_failed(Device device, size_t bytes);
void note_free(Device device, size_t bytes);
/// Bytes live now and at most since the last reset, on a device.
size_t live_bytes(Device device);
size_t peak_bytes(Device device);
void reset_peak(Device device);
/// Re-reads the environment settings (tests change them at run time); throws InvalidArgument
/// for a malformed setting and then keeps failing every allocation until a good one is read.
void reload_memory_settings();
/// Sets the fault-injection counter directly: the n-th allocation from now fails (0 = off).
void set_fault_allocation(long n);

}  // namespace porta::detail
