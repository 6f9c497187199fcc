// porta runtime — calling a kernel (contract in kernel_call.hpp).
#include "runtime/kernel_call.hpp"

#include <atomic>

namespace porta::detail {

static std::atomic<KernelCallHook> g_call_hooks[kNumDeviceTypes] = {};

void set_kernel_call_hook(DeviceType type, KernelCallHook hook) {
  g_call_hooks[static_cast<int>(type)].store(hook, std::memory_order_release);
}

void run_kernel(const KernelDef& kernel, KernelContext& ctx) {
  if (!kernel.strided_inputs)
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      Tensor& t = ctx.inputs[i];
      if (!t.defined() || t.is_contiguous()) continue;
      t = t.contiguous();
      if (i < 64) ctx.constant_inputs &= ~(uint64_t{1} << i);  // the copy is not the session's constant
    }
  KernelCallHook hook = g_call_hooks[static_cast<int>(ctx.device.type)].load(std::memory_order_acquire);
  if (hook) hook(kernel, ctx);
  else kernel.fn(ctx);
}

}  // namespace porta::detail
