// porta gpu kernels — ReduceSum, ReduceMean, ReduceMax, ReduceMin over any axes.
//
// The input is viewed with the kept axes first and the reduced axes last (a strided copy when
// that is not already its layout), so every output element is the reduction of one contiguous
// row; one block reduces one row. Floats accumulate in float (f16/bf16/f32) or double (f64),
// integers in int64 (results wrap to the output type; integer Mean truncates toward zero).
// Max/Min propagate NaN and are a ShapeError over an empty axis; float Mean of nothing is NaN.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/copy_view.cuh"
#include "ops/reduce_util.hpp"
#include "ops/shape_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

using opdef::ReduceKind;

template <typename T>
using reduce_acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, acc_t<T>>;

template <typename T, ReduceKind Kind>
__global__ void __launch_bounds__(kRowThreads)
    reduce_rows(const T* x, T* y, int64_t rows, int64_t len) {
  using A = reduce_acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* px = x + row * len;
    A v;
    if constexpr (Kind == ReduceKind::sum || Kind == ReduceKind::mean) {
      A acc = 0;
      for (int64_t j = threadIdx.x; j < len; j += blockDim.x) acc += static_cast<A>(load_acc<T>(px[j]));
      v = block_reduce(acc, SumOp{}, A(0));
      if constexpr (Kind == ReduceKind::mean) {
        if constexpr (std::is_integral_v<A>) v = len ? v / len : A(0);
        else v = v / static_cast<A>(len);  // 0 / 0 = NaN for an empty axis
      }
    } else {
      // len > 0 here (empty axes are rejected on the host): seed with the row's first value.
      A acc = static_cast<A>(load_acc<T>(px[0]));
      for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
        A e = static_cast<A>(load_acc<T>(px[j]));
        acc = Kind == ReduceKind::max ? MaxOp{}.combine(acc, e) : MinOp{}.combine(acc, e);
      }
      v = Kind == ReduceKind::max ? block_reduce(acc, MaxOp{}, acc) : block_reduce(acc, MinOp{}, acc);
    }
    if (threadIdx.x == 0) y[row] = store_acc<T>(static_cast<acc_t<T>>(v));
  }
}

template <ReduceKind Kind>
void reduce_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> axes = opdef::reduce_axes_of(ctx);
  const int64_t rows = y.numel();
  opdef::check_reduce_nonempty(Kind, x.shape(), axes, rows, ctx.op->name);
  if (rows == 0) return;
  if (axes.empty()) {  // noop_with_empty_axes: the input itself
    copy_view(x, y, ctx.device);
    return;
  }
  // Kept axes first, reduced axes last.
  std::vector<int> order;
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : axes) reduced[a] = true;
  for (int i = 0; i < x.rank(); ++i)
    if (!reduced[i]) order.push_back(i);
  for (int64_t a : axes) order.push_back(static_cast<int>(a));
  Tensor rows_view = x.permute(order);
  if (!rows_view.is_contiguous()) {
    Tensor packed = Tensor::empty(rows_view.shape(), x.dtype(), ctx.device);
    copy_view(rows_view, packed, ctx.device);
    rows_view = packed;
  }
  const int64_t len = rows == 0 ? 0 : x.numel() / rows;
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kNumeric>(x.dtype(), ctx.op->name, [&](auto tag) {
    using T = decltype(tag);
    unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
    launch<reduce_rows<T, Kind>>(blocks, kRowThreads, 0, stream(device),
        device_ptr<const T>(rows_view), device_ptr<T>(y), rows, len);
    PORTA_GPU_CHECK_LAUNCH(device, "reduce_rows");
  });
}

// GlobalAveragePool / GlobalMaxPool: X (N x C x spatial...) is already [N*C rows, spatial].
template <ReduceKind Kind>
void global_pool_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t rows = x.shape()[0] * x.shape()[1];
  if (rows == 0) return;
  const int64_t len = x.numel() / rows;
  if (len == 0 && Kind == ReduceKind::max)
    throw ShapeError(str("[", ctx.op->name, "] spatial axes are empty: X is ", shape_str(x.shape())));
  const int device = ctx.device.index;
  visit_gpu_dtype_in<kFloats>(x.dtype(), ctx.op->name, [&](auto tag) {
    using T = decltype(tag);
    unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535));
    launch<reduce_rows<T, Kind>>(blocks, kRowThreads, 0, stream(device), device_ptr<const T>(x),
                                                                      device_ptr<T>(y), rows, len);
    PORTA_GPU_CHECK_LAUNCH(device, "reduce_rows");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(GlobalAveragePool, kFloats, global_pool_gpu<ReduceKind::mean>)
PORTA_REGISTER_GPU_KERNEL(GlobalMaxPool, kFloats, global_pool_gpu<ReduceKind::max>)
PORTA_REGISTER_GPU_KERNEL_STRIDED(ReduceSum, kNumeric, reduce_gpu<ReduceKind::sum>, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(ReduceMean, kNumeric, reduce_gpu<ReduceKind::mean>, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(ReduceMax, kNumeric, reduce_gpu<ReduceKind::max>, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(ReduceMin, kNumeric, reduce_gpu<ReduceKind::min>, nullptr)

}  // namespace porta::PORTA_GPU_NS
