// porta gpu kernels — the elementwise family: one template for every unary, binary and
// ternary op with NumPy broadcasting and strided (non-contiguous) inputs.
//
// An op is a functor over accumulator values, e.g.
//   struct AddFn { template <class A> __device__ A operator()(A a, A b) const { return a + b; } };
// and registers with one line in elementwise.cu (see launch_elementwise).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "kernels/cuda/gpu_kernel.hpp"

namespace porta::PORTA_GPU_NS {

/// Dimensions kept after merging; a call with more declines and runs elsewhere.
inline constexpr int kMaxDims = 12;

/// Offsets of N operands (output first) for a linear output index, after dimension merging.
template <int N, typename Index>
struct Indexer {
  int rank = 0;
  Index sizes[kMaxDims] = {};
  Index strides[N][kMaxDims] = {};

  __device__ __forceinline__ void offsets(Index linear, Index (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      Index i = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }
};

/// Element strides of every operand broadcast to the output shape, merged where the layout
/// allows and with size-1 dimensions dropped. Operand 0 is the output (it must not overlap
/// itself: no zero strides).
struct Layout {
  int rank = 0;
  std::vector<int64_t> sizes;                 ///< merged output dimensions
  std::vector<std::vector<int64_t>> strides;  ///< [operand][dimension], operand 0 = output
  bool contiguous = true;  ///< every operand is dense in output order: offset = linear index
  bool fits_32bit = true;  ///< every offset fits a uint32 (and no stride is negative)
};

Layout make_layout(const Shape& out_shape, const std::vector<int64_t>& out_strides,
                   const std::vector<const Tensor*>& inputs);
/// For an output with its own strides (a view into a larger tensor, as Concat writes).
Layout make_layout(const Tensor& out, const std::vector<const Tensor*>& inputs);
/// For a contiguous output of `out_shape`.
Layout make_layout(const Shape& out_shape, const std::vector<const Tensor*>& inputs);
/// "" when the call fits the kernels (rank after merging <= kMaxDims), else the reason.
std::string elementwise_supports(const KernelContext& ctx);

template <int N, typename Index>
Indexer<N, Index> make_indexer(const Layout& l) {
  Indexer<N, Index> ix;
  ix.rank = l.rank;
  for (int d = 0; d < l.rank; ++d) {
    ix.sizes[d] = static_cast<Index>(l.sizes[d]);
    for (int k = 0; k < N; ++k) ix.strides[k][d] = static_cast<Index>(l.strides[k][d]);
  }
  return ix;
}

/// Device pointers of the M inputs, passed by value to the kernel.
template <typename In, int M>
struct InputPtrs {
  const In* p[M];
};

template <typename In, typename F, int M, typename Index, size_t... I>
__device__ __forceinline__ auto apply_dense(const F& f, const InputPtrs<In, M>& in, Index i,
                                            std::index_sequence<I...>) {
  return f(load_acc<In>(in.p[I][i])...);
}
template <typename In, typename F, int M, typename Index, size_t... I>
__device__ __forceinline__ auto apply_strided(const F& f, const InputPtrs<In, M>& in,
                                              const Index* off, std::index_sequence<I...>) {
  return f(load_acc<In>(in.p[I][off[I + 1]])...);  // off[0] is the output's
}

// One thread per output element in a grid-stride loop: out = f(in...) on accumulator values.
template <typename Out, typename In, int M, typename F>
__global__ void elementwise_dense(Out* out, int64_t n, F f, InputPtrs<In, M> in) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step)
    out[i] = store_acc<Out>(apply_dense(f, in, i, std::make_index_sequence<M>{}));
}

// 16-byte vectors: one 128-bit load per input and one store per V elements, which memory-bound
// ops need to approach the device's copy bandwidth.
template <typename T, int V>
struct alignas(16) VecOf {
  T v[V];
};
template <typename In, typename F, int M, int V, size_t... I>
__device__ __forceinline__ auto apply_vec(const F& f, const VecOf<In, V> (&x)[M], int j,
                                          std::index_sequence<I...>) {
  return f(load_acc<In>(x[I].v[j])...);
}

template <typename Out, typename In, int M, typename F>
__global__ void elementwise_dense_vec(Out* out, int64_t n_vec, F f, InputPtrs<In, M> in) {
  constexpr int V = 16 / sizeof(Out);
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n_vec; i += step) {
    VecOf<In, V> x[M];
#pragma unroll
    for (int k = 0; k < M; ++k) x[k] = reinterpret_cast<const VecOf<In, V>*>(in.p[k])[i];
    VecOf<Out, V> y;
#pragma unroll
    for (int j = 0; j < V; ++j) y.v[j] = store_acc<Out>(apply_vec(f, x, j, std::make_index_sequence<M>{}));
    reinterpret_cast<VecOf<Out, V>*>(out)[i] = y;
  }
}

template <typename Out, typename In, int M, typename F, typename Index>
__global__ void elementwise_strided(Out* out, Index n, Indexer<M + 1, Index> ix, F f,
                                    InputPtrs<In, M> in) {
  Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[M + 1];
    ix.offsets(i, off);
    out[off[0]] = store_acc<Out>(apply_strided(f, in, off, std::make_index_sequence<M>{}));
  }
}

/// Runs out = f(inputs...) over output 0 of `ctx`: M inputs, all of device type In, any
/// strides, broadcast to the output shape; the output may be a strided view. Launches on the
/// device stream; does not wait.
template <typename Out, typename In, int M, typename F>
void launch_elementwise(KernelContext& ctx, F f) {
  Tensor& out = ctx.out(0);
  int64_t n = out.numel();
  if (n == 0) return;
  int device = ctx.device.index;
  cudaStream_t s = stream(device);
  std::vector<const Tensor*> inputs;
  InputPtrs<In, M> ptrs;
  for (int k = 0; k < M; ++k) {
    inputs.push_back(&ctx.in(k));
    ptrs.p[k] = device_ptr<const In>(ctx.in(k));
  }
  Layout l = make_layout(out, inputs);
  Out* dst = device_ptr<Out>(out);
  constexpr int kThreads = 256;
  unsigned blocks = grid_for(n, kThreads, device);
  if (l.contiguous) {
    constexpr size_t kVecBytes = 16;
    bool aligned = sizeof(In) == sizeof(Out) && kVecBytes % sizeof(Out) == 0 &&
                   reinterpret_cast<uintptr_t>(dst) % kVecBytes == 0;
    for (int k = 0; k < M; ++k) aligned &= reinterpret_cast<uintptr_t>(ptrs.p[k]) % kVecBytes == 0;
    int64_t n_vec = aligned ? n / static_cast<int64_t>(kVecBytes / sizeof(Out)) : 0;
    int64_t done = n_vec * static_cast<int64_t>(kVecBytes / sizeof(Out));
    if (n_vec > 0) {
      if constexpr (sizeof(In) == sizeof(Out) && kVecBytes % sizeof(Out) == 0)
        launch<elementwise_dense_vec<Out, In, M, F>>(grid_for(n_vec, kThreads, device), kThreads, 0, s,
            dst, n_vec, f, ptrs);
    }
    if (done < n) {  // the tail (or everything, when unaligned) one element per thread
      InputPtrs<In, M> rest = ptrs;
      for (int k = 0; k < M; ++k) rest.p[k] += done;
      launch<elementwise_dense<Out, In, M, F>>(grid_for(n - done, kThreads, device), kThreads, 0, s,
          dst + done, n - done, f, rest);
    }
  } else if (l.fits_32bit) {
    // 32-bit index math: 64-bit division is several times slower on GPUs.
    launch<elementwise_strided<Out, In, M, F, uint32_t>>(blocks, kThreads, 0, s,
        dst, static_cast<uint32_t>(n), make_indexer<M + 1, uint32_t>(l), f, ptrs);
  } else {
    launch<elementwise_strided<Out, In, M, F, int64_t>>(blocks, kThreads, 0, s,
        dst, n, make_indexer<M + 1, int64_t>(l), f, ptrs);
  }
  PORTA_GPU_CHECK_LAUNCH(device, "elementwise kernel");
}

}  // namespace porta::PORTA_GPU_NS
