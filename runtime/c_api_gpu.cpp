// porta runtime — C ABI: what a kernel written outside porta needs on a GPU: its tensors'
// device addresses, the device's stream, and scratch memory for the call. The backends offer
// these through their kernel-services tables (runtime/kernel_services.hpp); nothing here
// includes a backend.
#include <algorithm>

#include "porta/backend.hpp"
#include "porta/porta.hpp"
#include "runtime/c_api_callbacks.hpp"
#include "runtime/kernel_services.hpp"

using namespace porta;
using namespace porta::capi;

namespace {

// The address a kernel of the storage's kind uses for byte `offset` of it, or nullptr when the
// kind's kernels reach memory another way (Vulkan: bindings).
void* kernel_address(const Storage& s, size_t offset) {
  const detail::KernelServices* services = detail::kernel_services(s.device().type);
  if (services && services->device_pointer) return services->device_pointer(s.handle(), offset);
  Backend* b = s.backend();
  return b ? b->kernel_pointer(s.handle(), offset) : nullptr;
}

[[noreturn]] void no_address(const char* fn, const std::string& what) {
  throw DeviceMismatch(str("[", fn, "] ", what, " has no address a kernel can use (a Vulkan kernel binds its "
                           "tensors with porta_vulkan_dispatch, or porta_tensor_create makes a buffer to bind)"));
}

porta_kernel_context_s& running_kernel(porta_kernel_context* ctx, const char* fn) {
  check_active(ctx, fn, "ctx");
  if (ctx->supports_call)
    bad_argument(str("[", fn, "] a supports callback cannot use it (it only decides from shapes and attributes)"));
  return *ctx;
}

}  // namespace

extern "C" {

porta_status porta_tensor_device_pointer(porta_tensor tensor, void** pointer) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_device_pointer";
    Tensor& t = data_tensor(tensor, fn);
    need(pointer, fn, "pointer");
    if (!t.defined() || !t.storage()) no_address(fn, "an undefined tensor");
    void* p = kernel_address(*t.storage(), static_cast<size_t>(t.offset()) * dtype_size(t.dtype()));
    if (!p) no_address(fn, t.describe());
    *pointer = p;
  })
}

porta_status porta_kernel_stream(porta_kernel_context* ctx, void** stream) {
  PORTA_C_GUARD({
    const char* fn = "porta_kernel_stream";
    auto& c = running_kernel(ctx, fn);
    need(stream, fn, "stream");
    const Device d = c.kernel->device;
    const detail::KernelServices* services = detail::kernel_services(d.type);
    if (!services || !services->stream)
      throw DeviceMismatch(str("[", fn, "] called from a ", d.str(), " kernel; only kernels of device kinds with a stream have one (",
                               detail::kinds_with_streams(), ")"));
    *stream = services->stream(d.index);
  })
}

porta_status porta_kernel_scratch(porta_kernel_context* ctx, size_t bytes, void** pointer) {
  PORTA_C_GUARD({
    const char* fn = "porta_kernel_scratch";
    auto& c = running_kernel(ctx, fn);
    need(pointer, fn, "pointer");
    const Device d = c.kernel->device;
    if (bytes == 0) bad_argument(str("[", fn, "] bytes should be at least 1, got 0"));
    Backend& backend = backend_for(d);
    Capabilities caps = backend.capabilities(d.index);
    size_t limit = caps.max_buffer_bytes;
    if (caps.total_memory > 0) limit = std::min(limit, caps.total_memory);
    if (bytes > limit || c.scratch_bytes + bytes > limit)
      bad_argument(str("[", fn, "] ", bytes, " bytes of scratch (", c.scratch_bytes, " already taken in this call) exceed ",
                       d.str(), "'s limit of ", limit, " bytes for one call (",
                       caps.total_memory > 0 && caps.total_memory == limit ? "its memory" : "its largest buffer", ")"));
    // The alignment porta.h promises (64 bytes on the cpu, 256 elsewhere) comes from the size:
    // allocators align a block to its size's granule (the emulator to the largest power of two
    // dividing it, so that its end meets the guard page), so the block is rounded up to one.
    const size_t granule = d.type == DeviceType::cpu ? 64 : 256;
    std::shared_ptr<Storage> s = Storage::allocate(d, (bytes + granule - 1) / granule * granule);
    void* p = kernel_address(*s, 0);
    if (!p) no_address(fn, str("scratch on ", d.str()));
    c.scratch.push_back(std::move(s));
    c.scratch_bytes += bytes;
    *pointer = p;
  })
}

}  // extern "C"
