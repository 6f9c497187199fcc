// porta gpu kernels — what every kernels/cuda/*.cu file uses: device element types, dtype
// dispatch, tensor pointers, launch sizes and kernel registration. Compiled for CUDA and HIP.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/gpu_runtime.hpp"
#include "porta/op.hpp"
#include "porta/tensor.hpp"
#include "porta/util.hpp"

namespace porta::PORTA_GPU_NS {

/// bfloat16 storage on the device (own type: CUDA's and HIP's bf16 headers differ).
struct bf16_t {
  uint16_t bits;
};

/// Type arithmetic happens in: float for the 16-bit floats, the type itself otherwise.
template <typename T> struct acc_type { using type = T; };
template <> struct acc_type<__half> { using type = float; };
template <> struct acc_type<bf16_t> { using type = float; };
template <typename T> using acc_t = typename acc_type<T>::type;

template <typename T>
__device__ __forceinline__ acc_t<T> load_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(v);
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    return __uint_as_float(static_cast<unsigned>(v.bits) << 16);
  } else {
    return v;
  }
}

/// Converts an accumulator back to storage: round to nearest even for 16-bit floats, C++
/// conversion otherwise (the CPU kernels' semantics).
template <typename T>
__device__ __forceinline__ T store_acc(acc_t<T> v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(v);
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    unsigned x = __float_as_uint(v);
    if ((x & 0x7fffffffu) > 0x7f800000u) return bf16_t{static_cast<uint16_t>((x >> 16) | 0x40u)};
    return bf16_t{static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
  } else {
    return static_cast<T>(v);
  }
}

/// Calls f(T{}) with T the device storage type of `t`.
template <typename F>
decltype(auto) visit_gpu_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::f64: return f(double{});
    case DType::f16: return f(__half{});
    case DType::bf16: return f(bf16_t{});
    case DType::i64: return f(int64_t{});
    case DType::i32: return f(int32_t{});
    case DType::i8: return f(int8_t{});
    case DType::u8: return f(uint8_t{});
    case DType::boolean: return f(bool{});
  }
  throw DTypeError(str("[" PORTA_GPU_NAME "] unknown dtype code ", static_cast<int>(t)));
}

/// The porta dtype of a device storage type.
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  else if constexpr (std::is_same_v<T, double>) return DType::f64;
  else if constexpr (std::is_same_v<T, __half>) return DType::f16;
  else if constexpr (std::is_same_v<T, bf16_t>) return DType::bf16;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::i64;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::i8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::u8;
  else return DType::boolean;
}

/// Calls f(T{}) for the device type of `t` when it is in `Allowed` (only those are
/// instantiated, which keeps nvcc/hipcc time down); otherwise throws DTypeError.
template <DTypeSet Allowed, typename F>
void visit_gpu_dtype_in(DType t, std::string_view op, F&& f) {
  visit_gpu_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (dtype_in(Allowed, dtype_of<T>())) {
      f(tag);
    } else {
      throw DTypeError(str("[", op, "] " PORTA_GPU_NAME " kernel takes ", dtype_set_names(Allowed),
                           ", got ", dtype_name(t)));
    }
  });
}

/// Device pointer to a tensor's first element: the storage handle plus the view offset, which
/// counts elements of the tensor's dtype whatever T is (device_ptr<char> is its first byte,
/// device_ptr<uint32_t> of an f32 view its first element).
template <typename T>
T* device_ptr(const Tensor& t) {
  using Byte = std::conditional_t<std::is_const_v<T>, const char, char>;
  return reinterpret_cast<T*>(static_cast<Byte*>(t.storage()->handle()) +
                              t.offset() * static_cast<int64_t>(dtype_size(t.dtype())));
}

/// Blocks for a grid-stride loop over n items: enough to fill the device, no more.
inline unsigned grid_for(int64_t n, int threads, int device) {
  int64_t wanted = (n + threads - 1) / threads;
  int64_t cap = int64_t{device_info(device).multiprocessors} * 32;
  return static_cast<unsigned>(std::clamp<int64_t>(wanted, 1, cap));
}

/// Registers a kernel of the backend this file is being compiled for; `impl` names it when the
/// op has several implementations there (tried by descending priority).
void register_gpu_kernel(const char* op, DTypeSet dtypes, KernelFn fn, SupportsFn supports,
                         bool strided_inputs, KernelImpl impl = {});

}  // namespace porta::PORTA_GPU_NS

/// PORTA_REGISTER_GPU_KERNEL(Relu, kFloats, relu_gpu): registers for cuda or hip, whichever
/// this compilation is for. The _IF form adds a `supports` function; the _STRIDED form takes
/// kernels that read strided inputs themselves (no contiguous copy first) and a `supports`
/// function (may be nullptr).
/// These macros register without a lambda on purpose: hipcc (clang 15) gives lambdas in
/// namespace-scope initializers of one file the same mangled name, so with the generic
/// PORTA_REGISTER_KERNEL several registrations in one .cu file all run the first one.
#define PORTA_REGISTER_GPU_KERNEL_DEF(Op, DTypes, Fn, Supports, Strided, Impl)                  \
  namespace {                                                                                  \
  const bool PORTA_CONCAT(porta_gpu_kernel_registered_##Op##_, __LINE__) =                        \
      (::porta::PORTA_GPU_NS::register_gpu_kernel(#Op, (DTypes), (Fn), (Supports), (Strided), Impl), \
       true);                                                                                  \
  }
#define PORTA_REGISTER_GPU_KERNEL_WITH(Op, DTypes, Fn, Supports, Strided) \
  PORTA_REGISTER_GPU_KERNEL_DEF(Op, DTypes, Fn, Supports, Strided, ::porta::KernelImpl())
#define PORTA_REGISTER_GPU_KERNEL(Op, DTypes, Fn) \
  PORTA_REGISTER_GPU_KERNEL_WITH(Op, DTypes, Fn, nullptr, false)
#define PORTA_REGISTER_GPU_KERNEL_IF(Op, DTypes, Fn, Supports) \
  PORTA_REGISTER_GPU_KERNEL_WITH(Op, DTypes, Fn, Supports, false)
#define PORTA_REGISTER_GPU_KERNEL_STRIDED(Op, DTypes, Fn, Supports) \
  PORTA_REGISTER_GPU_KERNEL_WITH(Op, DTypes, Fn, Supports, true)
/// One implementation among several: PORTA_REGISTER_GPU_KERNEL_IMPL(Conv, kFloats, conv_cudnn,
/// cudnn_supports, "cudnn", 1).
#define PORTA_REGISTER_GPU_KERNEL_IMPL(Op, DTypes, Fn, Supports, Name, Priority) \
  PORTA_REGISTER_GPU_KERNEL_DEF(Op, DTypes, Fn, Supports, false, (::porta::KernelImpl{Name, Priority}))
