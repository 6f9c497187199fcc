// porta gpu kernels — registration helper shared by the kernel files.
#include "kernels/cuda/gpu_kernel.hpp"

namespace porta::PORTA_GPU_NS {

void register_gpu_kernel(const char* op, DTypeSet dtypes, KernelFn fn, SupportsFn supports,
                         bool strided_inputs, KernelImpl impl) {
  KernelDef k;
  k.op = op;
  k.backend = PORTA_GPU_DEVICE_TYPE;
  k.dtypes = dtypes;
  k.fn = std::move(fn);
  k.supports = std::move(supports);
  k.strided_inputs = strided_inputs;
  k.impl = std::move(impl);
  register_kernel(std::move(k));
}

}  // namespace porta::PORTA_GPU_NS
