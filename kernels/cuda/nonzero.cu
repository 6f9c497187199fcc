// porta gpu kernels — NonZero. Its input is a host input (ops/nonzero.cpp): the output's
// shape, and so every coordinate, is known on the host before the call, so the kernel finds
// the positions there (as inference did) and writes them to the device in one copy.
#include <vector>

#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/nonzero.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

void nonzero_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> positions = opdef::nonzero_positions(x);
  opdef::check_nonzero_output(x, y, positions);
  if (y.numel() == 0) return;
  std::vector<int64_t> coordinates(static_cast<size_t>(y.numel()));
  opdef::write_nonzero_coordinates(x.shape(), positions, coordinates.data());
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  PORTA_GPU_CHECK(device, cudaMemcpyAsync(device_ptr<int64_t>(y), coordinates.data(), y.nbytes(),
                                          cudaMemcpyHostToDevice, s));
  PORTA_GPU_CHECK(device, cudaStreamSynchronize(s));  // `coordinates` is freed on return
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(NonZero, kAllTypes, nonzero_gpu)

}  // namespace porta::PORTA_GPU_NS
