// porta gpu kernels — elementwise ops: each is a functor over accumulator values plus one
// registration line. Broadcasting, strides and dtypes come from elementwise.cuh.
#include "kernels/cuda/elementwise.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

/// Kernel function for a unary or binary op whose output has the input's dtype.
template <int Inputs, DTypeSet Allowed, typename F>
KernelFn same_type_kernel(const char* op) {
  return [op](KernelContext& ctx) {
    visit_gpu_dtype_in<Allowed>(ctx.in(0).dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      launch_elementwise<T, T, Inputs>(ctx, F{});
    });
  };
}

// ---- unary ----------------------------------------------------------------------------------

// ONNX Relu is max(x, 0) as numpy evaluates it: NaN stays NaN (as in PyTorch).
struct ReluFn {
  template <typename A>
  __device__ A operator()(A x) const { return x < A(0) ? A(0) : x; }
};

// ---- binary ---------------------------------------------------------------------------------

// Integer overflow wraps like the CPU kernels (computed in int, converted back).
struct AddFn {
  template <typename A>
  __device__ A operator()(A a, A b) const { return static_cast<A>(a + b); }
};

constexpr DTypeSet kReluTypes = kFloats | kI64 | kI32 | kI8;

}  // namespace

PORTA_REGISTER_GPU_KERNEL_STRIDED(Relu, kReluTypes, (same_type_kernel<1, kReluTypes, ReluFn>("Relu")),
                                  elementwise_supports)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Add, kNumeric, (same_type_kernel<2, kNumeric, AddFn>("Add")),
                                  elementwise_supports)

}  // namespace porta::PORTA_GPU_NS
