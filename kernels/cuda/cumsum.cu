// porta gpu kernels — CumSum (any axis, exclusive, reverse), as ops/cumsum.cpp: one thread per
// line along the axis sums it in order, in double for floats (as the cpu kernel) and in int64
// for integers (stored wrapped to the element type). The axis is read on the device (each
// thread derives [outer, n, inner] from the dims and the axis value, which the host already
// validated when inferring shapes), so no value is copied back and no host wait happens.
#include "kernels/cuda/elementwise.cuh"
#include "ops/common.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

struct ScanDims {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
};

template <typename T, typename P>
__global__ void cumsum_kernel(const T* x, T* y, int64_t total, ScanDims d, const P* axis_value, bool exclusive,
                              bool reverse) {
  int64_t axis = static_cast<int64_t>(axis_value[0]);
  if (axis < 0) axis += d.rank;
  if (axis < 0 || axis >= d.rank) return;  // rejected by shape inference
  int64_t n = d.dims[axis], inner = 1;
  for (int a = static_cast<int>(axis) + 1; a < d.rank; ++a) inner *= d.dims[a];
  const int64_t lines = total / n;
  using S = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < lines; w += step) {
    const int64_t base = (w / inner) * n * inner + w % inner;
    S sum = 0;
    for (int64_t s = 0; s < n; ++s) {
      const int64_t j = base + (reverse ? n - 1 - s : s) * inner;
      const S v = static_cast<S>(load_acc<T>(x[j]));
      if (!exclusive) sum += v;
      if constexpr (std::is_integral_v<T>) y[j] = static_cast<T>(static_cast<uint64_t>(sum));
      else y[j] = store_acc<T>(static_cast<acc_t<T>>(sum));
      if (exclusive) sum += v;
    }
  }
}

std::string cumsum_supports(const KernelContext& ctx) {
  if (ctx.in(0).rank() > kMaxDims)
    return str("rank ", ctx.in(0).rank(), " is above the gpu kernel's ", kMaxDims);
  return "";
}

void cumsum_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t total = y.numel();
  if (total == 0) return;
  ScanDims d;
  d.rank = x.rank();
  for (int a = 0; a < d.rank; ++a) d.dims[a] = x.shape()[a];
  const int device = ctx.device.index;
  Tensor axis = ctx.in(1).device() == ctx.device ? ctx.in(1) : ctx.in(1).to(ctx.device);
  const bool exclusive = ctx.attrs->get_int("exclusive") != 0, reverse = ctx.attrs->get_int("reverse") != 0;
  visit_gpu_dtype_in<kFloats | kI32 | kI64>(x.dtype(), "CumSum", [&](auto tag) {
    using T = decltype(tag);
    auto launch_for = [&](auto axis_tag) {
      using P = decltype(axis_tag);
      // At most `total` lines (lines = total / n): the grid covers them whatever the axis.
      launch<cumsum_kernel<T, P>>(grid_for(total, 256, device), 256, 0, stream(device),
          device_ptr<const T>(x), device_ptr<T>(y), total, d, device_ptr<const P>(axis), exclusive, reverse);
    };
    if (axis.dtype() == DType::i64) launch_for(int64_t{});
    else launch_for(int32_t{});
    PORTA_GPU_CHECK_LAUNCH(device, "cumsum_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IF(CumSum, kFloats | kI32 | kI64, cumsum_gpu, cumsum_supports)

}  // namespace porta::PORTA_GPU_NS
