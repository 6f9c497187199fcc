// porta gpu kernels — comparisons (Equal, Less, Greater -> bool), variadic Max/Min (NaN
// propagates, as PyTorch's maximum/minimum), Sum and Mean, and Where (condition ? X : Y), all broadcasting.
#include "kernels/cuda/copy_view.cuh"
#include "kernels/cuda/elementwise_ops.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

struct EqualFn {
  template <typename A>
  __device__ bool operator()(A a, A b) const { return a == b; }
};
struct LessFn {
  template <typename A>
  __device__ bool operator()(A a, A b) const { return a < b; }
};
struct GreaterFn {
  template <typename A>
  __device__ bool operator()(A a, A b) const { return a > b; }
};

template <DTypeSet Allowed, typename F>
KernelFn compare_kernel(const char* op) {
  return [op](KernelContext& ctx) {
    visit_gpu_dtype_in<Allowed>(ctx.in(0).dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      launch_elementwise<bool, T, 2>(ctx, F{});
    });
  };
}

template <bool IsMax>
struct MinMaxFn {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    if constexpr (!std::is_integral_v<A>) {
      if (a != a) return a;  // NaN wins
      if (b != b) return b;
    }
    return (IsMax ? a < b : b < a) ? b : a;
  }
};

struct SumFn {
  template <typename A>
  __device__ A operator()(A a, A b) const { return a + b; }
};
struct ScaleFn {
  double factor;
  template <typename A>
  __device__ A operator()(A a) const { return a * static_cast<A>(factor); }
};

// The variadic ops (Max, Min, Sum, Mean) fold the inputs pairwise into the output:
// out = f(in0, in1), then out = f(out, in_k); Mean then scales by 1/n. Each element is read
// and written by the same thread, so updating in place is safe.
template <DTypeSet Allowed, typename F, bool Mean = false>
KernelFn variadic_gpu(const char* op) {
  return [op](KernelContext& ctx) {
    Tensor& out = ctx.out(0);
    if (ctx.inputs.size() == 1) {
      copy_view(ctx.in(0), out, ctx.device);
      return;
    }
    visit_gpu_dtype_in<Allowed>(ctx.in(0).dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      KernelContext step;
      step.device = ctx.device;
      step.outputs = {out};
      step.inputs = {ctx.in(0), ctx.in(1)};
      launch_elementwise<T, T, 2>(step, F{});
      for (size_t k = 2; k < ctx.inputs.size(); ++k) {
        step.inputs = {out, ctx.in(k)};
        launch_elementwise<T, T, 2>(step, F{});
      }
      if constexpr (Mean) {
        step.inputs = {out};
        launch_elementwise<T, T, 1>(step, ScaleFn{1.0 / static_cast<double>(ctx.inputs.size())});
      }
    });
  };
}

// ---- Where ----------------------------------------------------------------------------------

template <typename E, typename Index>
__global__ void where_kernel(E* out, const bool* cond, const E* x, const E* y, Index n,
                             Indexer<4, Index> ix) {
  Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[4];
    ix.offsets(i, off);
    out[off[0]] = cond[off[1]] ? x[off[2]] : y[off[3]];
  }
}

std::string where_supports(const KernelContext& ctx) { return elementwise_supports(ctx); }

void where_gpu(KernelContext& ctx) {
  Tensor& out = ctx.out(0);
  int64_t n = out.numel();
  if (n == 0) return;
  const Tensor &c = ctx.in(0), &x = ctx.in(1), &y = ctx.in(2);
  Layout l = make_layout(out, {&c, &x, &y});
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  auto launch_for = [&](auto elem) {
    using E = decltype(elem);
    if (l.fits_32bit)
      launch<where_kernel<E, uint32_t>>(grid_for(n, 256, device), 256, 0, s,
          device_ptr<E>(out), device_ptr<const bool>(c), device_ptr<const E>(x), device_ptr<const E>(y),
          static_cast<uint32_t>(n), make_indexer<4, uint32_t>(l));
    else
      launch<where_kernel<E, int64_t>>(grid_for(n, 256, device), 256, 0, s,
          device_ptr<E>(out), device_ptr<const bool>(c), device_ptr<const E>(x), device_ptr<const E>(y),
          n, make_indexer<4, int64_t>(l));
  };
  switch (dtype_size(out.dtype())) {  // a selection moves bytes: one kernel per element size
    case 1: launch_for(uint8_t{}); break;
    case 2: launch_for(uint16_t{}); break;
    case 4: launch_for(uint32_t{}); break;
    default: launch_for(uint64_t{}); break;
  }
  PORTA_GPU_CHECK_LAUNCH(device, "where_kernel");
}

constexpr DTypeSet kEqualTypes = kAllTypes;

}  // namespace

PORTA_REGISTER_GPU_KERNEL_STRIDED(Equal, kEqualTypes, (compare_kernel<kEqualTypes, EqualFn>("Equal")),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Less, kNumeric, (compare_kernel<kNumeric, LessFn>("Less")),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Greater, kNumeric, (compare_kernel<kNumeric, GreaterFn>("Greater")),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Max, kNumeric, (variadic_gpu<kNumeric, MinMaxFn<true>>("Max")), elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Min, kNumeric, (variadic_gpu<kNumeric, MinMaxFn<false>>("Min")), elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Sum, kFloats, (variadic_gpu<kFloats, SumFn>("Sum")), elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Mean, kFloats, (variadic_gpu<kFloats, SumFn, true>("Mean")), elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Where, kAllTypes, where_gpu, where_supports)

}  // namespace porta::PORTA_GPU_NS
