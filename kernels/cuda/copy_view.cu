// porta gpu kernels — strided copies by element size.
#include "kernels/cuda/copy_view.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

struct CopyFn {
  template <typename A>
  __device__ A operator()(A x) const { return x; }
};

}  // namespace

void copy_view(const Tensor& src, const Tensor& dst, Device device) {
  if (dst.numel() == 0) return;
  if (src.dtype() != dst.dtype())
    throw DTypeError(str("[copy] " PORTA_GPU_NAME " copy from ", src.describe(), " into ", dst.describe()));
  if (src.shape() == dst.shape() && src.is_contiguous() && dst.is_contiguous()) {
    if (src.storage() == dst.storage() && src.offset() == dst.offset()) return;  // aliased
    PORTA_GPU_CHECK(device.index, cudaMemcpyAsync(device_ptr<char>(dst) + 0, device_ptr<const char>(src),
                                                  dst.nbytes(), cudaMemcpyDeviceToDevice,
                                                  stream(device.index)));
    return;
  }
  Layout l = make_layout(dst, {&src});
  if (l.rank > kMaxDims)
    throw Unsupported(str("[copy] " PORTA_GPU_NAME " copy of ", src.describe(), " into ", dst.describe(),
                          " needs ", l.rank, " axes after merging, the kernel takes ", kMaxDims));
  KernelContext c;
  c.device = device;
  c.inputs = {src};
  c.outputs = {dst};
  switch (dtype_size(dst.dtype())) {
    case 1: launch_elementwise<uint8_t, uint8_t, 1>(c, CopyFn{}); break;
    case 2: launch_elementwise<uint16_t, uint16_t, 1>(c, CopyFn{}); break;
    case 4: launch_elementwise<uint32_t, uint32_t, 1>(c, CopyFn{}); break;
    case 8: launch_elementwise<uint64_t, uint64_t, 1>(c, CopyFn{}); break;
    default: throw DTypeError(str("[copy] unexpected element size of ", dst.describe()));
  }
}

}  // namespace porta::PORTA_GPU_NS
