// porta runtime — C ABI: Vulkan kernels from outside (SPIR-V given by the caller).
#include <cstring>

#include "porta/porta.hpp"
#include "runtime/c_api_callbacks.hpp"
#include "runtime/kernel_services.hpp"

using namespace porta;
using namespace porta::capi;

namespace {

// The services of the backend that takes shaders (the Vulkan backend installs them:
// kernels/vulkan/c_api_launch.cpp), or BackendUnavailable.
const detail::KernelServices& hooks(const char* fn) {
  const detail::KernelServices* h = detail::shader_services();
  if (!h) throw BackendUnavailable(str("[", fn, "] this porta was built without a backend that takes shaders (Vulkan)"));
  return *h;
}

}  // namespace

extern "C" {

porta_status porta_vulkan_register_shader(const char* name, const void* spirv, size_t bytes) {
  PORTA_C_GUARD({
    const char* fn = "porta_vulkan_register_shader";
    need(name, fn, "name");
    need(spirv, fn, "spirv");
    if (!*name) bad_argument(str("[", fn, "] name should not be empty"));
    if (bytes < 20 || bytes % 4)
      bad_argument(str("[", fn, "] SPIR-V should be a whole number of 32-bit words (at least 5), got ", bytes, " bytes"));
    std::vector<uint32_t> words(bytes / 4);
    std::memcpy(words.data(), spirv, bytes);
    if (words[0] != 0x07230203u)
      bad_argument(str("[", fn, "] '", name, "' does not start with the SPIR-V magic number 0x07230203"));
    hooks(fn).register_shader(name, words.data(), words.size());
  })
}

porta_status porta_vulkan_dispatch(porta_kernel_context* ctx, const porta_vulkan_dispatch_desc* d) {
  PORTA_C_GUARD({
    const char* fn = "porta_vulkan_dispatch";
    check_active(ctx, fn, "ctx");
    need(d, fn, "desc");
    if (d->struct_size < sizeof(porta_vulkan_dispatch_desc))
      bad_argument(str("[", fn, "] desc struct_size should be at least ", sizeof(porta_vulkan_dispatch_desc),
                       ", got ", d->struct_size));
    need(d->shader, fn, "desc->shader");
    if (d->num_tensors) {
      need(d->tensors, fn, "desc->tensors");
      need(d->writes, fn, "desc->writes");
    }
    if (d->push_bytes > 128 || d->push_bytes % 4)
      bad_argument(str("[", fn, "] push constants should be a multiple of 4 bytes, at most 128, got ", d->push_bytes));
    if (d->push_bytes) need(d->push, fn, "desc->push");
    if (d->local_size == 0 || d->local_size > 1024)
      bad_argument(str("[", fn, "] local_size should be 1..1024, got ", d->local_size));
    if (ctx->supports_call) bad_argument(str("[", fn, "] a supports callback cannot dispatch (it only decides)"));
    const KernelContext& kc = *ctx->kernel;
    // The kernel's own kind must offer shader dispatch (the Vulkan backend's table does).
    const detail::KernelServices* own = detail::kernel_services(kc.device.type);
    if (!own || !own->dispatch)
      throw DeviceMismatch(str("[", fn, "] called from a ", kc.device.str(), " kernel; only kernels of ",
                               detail::kinds_with_shaders(), " dispatch shaders"));
    std::vector<Tensor> tensors;
    std::vector<bool> writes;
    for (size_t i = 0; i < d->num_tensors; ++i) {
      Tensor& t = data_tensor(d->tensors[i], fn);
      if (t.device() != kc.device)
        throw DeviceMismatch(str("[", fn, "] binding ", i, " is ", t.describe(), ", the kernel runs on ", kc.device.str()));
      tensors.push_back(t);
      writes.push_back(d->writes[i] != 0);
    }
    std::vector<uint32_t> push(d->push_bytes / 4);
    if (d->push_bytes) std::memcpy(push.data(), d->push, d->push_bytes);
    own->dispatch(kc, d->shader, tensors, writes, push, d->local_size, d->groups);
  })
}

}  // extern "C"
