// porta gpu kernels — GatherElements, GatherND, ScatterElements, ScatterND (one source for
// CUDA and HIP).
//
// Indices are untrusted, as in gather.cu: small kernels check every index on the device and
// report the first bad one through a deferred check (one per data axis the indices address),
// which raises the cpu kernel's ShapeError (op, axis, bound, value) when the host next waits
// for the stream; the work kernels skip bad indices, so nothing is read or written out of
// bounds and no host wait happens inside a graph run.
//
// Each op maps a linear element w (of the output for the gathers, of the updates for the
// scatters) to one data offset: an ElemTarget (…Elements) or an NdTarget (…ND). Scatters copy
// the data first, then:
//   reduction none: the last update of each target wins (as on cpu, deterministic): every
//     update claims its target with atomicMax of its position in a scratch array, then only
//     the claiming update writes;
//   add/mul/max/min: atomic read-modify-write (atomicAdd for f32 add, a compare-and-swap loop
//     otherwise) on 4- and 8-byte types; 16- and 8-bit types are declined (cpu fallback).
#include <type_traits>

#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

using opdef::ScatterReduction;
constexpr int kMaxRank = 8;

// GatherElements / ScatterElements: element w of indices (shape dims[]) -> data offset.
struct ElemMap {
  int rank = 0, axis = 0;
  int64_t dim = 0;                   // data's size along axis
  int64_t dims[kMaxRank] = {};       // indices' shape
  int64_t strides[kMaxRank] = {};    // data's strides
};
template <typename I>
struct ElemTarget {
  const I* ind;
  ElemMap m;
  __device__ bool operator()(int64_t w, int64_t* off) const {
    int64_t k = static_cast<int64_t>(ind[w]);
    if (k < -m.dim || k >= m.dim) return false;  // reported by check_kernel
    if (k < 0) k += m.dim;
    int64_t o = 0;
    for (int d = m.rank - 1; d >= 0; --d) {
      int64_t c = w % m.dims[d];
      w /= m.dims[d];
      o += (d == m.axis ? k : c) * m.strides[d];
    }
    *off = o;
    return true;
  }
};

// GatherND / ScatterND: element w = (tuple t, slice element s) -> data offset row(t) * slice + s.
struct NdMap {
  int k = 0;
  int64_t per_batch = 1, rows_per_batch = 1, slice = 1;
  int64_t dims[kMaxRank] = {};  // data dims the tuples address
};
template <typename I>
struct NdTarget {
  const I* ind;
  NdMap m;
  __device__ bool operator()(int64_t w, int64_t* off) const {
    int64_t t = w / m.slice, row = 0;
    for (int j = 0; j < m.k; ++j) {
      int64_t v = static_cast<int64_t>(ind[t * m.k + j]);
      if (v < -m.dims[j] || v >= m.dims[j]) return false;  // reported by check_kernel
      row = row * m.dims[j] + (v < 0 ? v + m.dims[j] : v);
    }
    *off = ((t / m.per_batch) * m.rows_per_batch + row) * m.slice + w % m.slice;
    return true;
  }
};

// Indices ind[i * stride], i < count, all in [-dim, dim), else the first failure is recorded.
template <typename I>
__global__ void check_kernel(const I* ind, int64_t count, int64_t stride, int64_t dim, DeferredCheck check) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += step) {
    int64_t k = static_cast<int64_t>(ind[i * stride]);
    if (k < -dim || k >= dim) report_failed_check(check, k);
  }
}

template <typename E, typename M>
__global__ void gather_kernel(const E* data, E* out, int64_t n, M map) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < n; w += step) {
    int64_t src;
    if (map(w, &src)) out[w] = data[src];
  }
}

// reduction none, pass 1: owner[target] = the last update (largest w) aiming at it.
template <typename M>
__global__ void claim_kernel(int* owner, int64_t n, M map) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < n; w += step) {
    int64_t dst;
    if (map(w, &dst)) atomicMax(owner + dst, static_cast<int>(w));
  }
}

// reduction none, pass 2: the owner writes.
template <typename E, typename M>
__global__ void scatter_set_kernel(const E* upd, E* out, const int* owner, int64_t n, M map) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < n; w += step) {
    int64_t dst;
    if (map(w, &dst) && owner[dst] == static_cast<int>(w)) out[dst] = upd[w];
  }
}

template <int R, typename T>
__device__ T fold(T a, T b) {
  if constexpr (R == static_cast<int>(ScatterReduction::add)) return a + b;
  else if constexpr (R == static_cast<int>(ScatterReduction::mul)) return a * b;
  else if constexpr (R == static_cast<int>(ScatterReduction::max)) return a < b ? b : a;
  else return b < a ? b : a;
}

template <int R, typename T>
__device__ void atomic_fold(T* addr, T v) {
  if constexpr (R == static_cast<int>(ScatterReduction::add) && std::is_same_v<T, float>) {
    atomicAdd(addr, v);
  } else {
    using U = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
    static_assert(sizeof(T) == sizeof(U));
    U* p = reinterpret_cast<U*>(addr);
    U old = *p, assumed;
    do {
      assumed = old;
      T cur, next;
      __builtin_memcpy(&cur, &assumed, sizeof(T));
      next = fold<R>(cur, v);
      U bits;
      __builtin_memcpy(&bits, &next, sizeof(T));
      old = atomicCAS(p, assumed, bits);
    } while (old != assumed);
  }
}

template <int R, typename T, typename M>
__global__ void scatter_fold_kernel(const T* upd, T* out, int64_t n, M map) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < n; w += step) {
    int64_t dst;
    if (map(w, &dst)) atomic_fold<R>(out + dst, upd[w]);
  }
}

// Arms one deferred check per data axis the indices address and queues its kernel.
template <typename I>
void check_indices(const KernelContext& ctx, const char* op, const Tensor& ind, int64_t count, int64_t stride,
                   int64_t first_axis, const Shape& data) {
  if (count == 0) return;
  const int device = ctx.device.index;
  for (int64_t j = 0; j < stride; ++j) {
    int64_t axis = first_axis + j, dim = data[axis];
    DeferredCheck check = arm_deferred_check(device, [op, axis, data](int64_t bad) {
      opdef::check_axis_index(op, bad, axis, data);
    });
    launch<check_kernel<I>>(grid_for(count, 256, device), 256, 0, stream(device), device_ptr<const I>(ind) + j, count,
                                                                              stride, dim, check);
    PORTA_GPU_CHECK_LAUNCH(device, "check_kernel");
  }
}

template <typename I>
ElemTarget<I> elem_target(const Tensor& x, const Tensor& ind, int64_t axis) {
  ElemTarget<I> t{device_ptr<const I>(ind), {}};
  t.m.rank = x.rank();
  t.m.axis = static_cast<int>(axis);
  t.m.dim = x.shape()[axis];
  int64_t stride = 1;
  for (int d = x.rank() - 1; d >= 0; --d) {
    t.m.dims[d] = ind.shape()[d];
    t.m.strides[d] = stride;
    stride *= x.shape()[d];
  }
  return t;
}

template <typename I>
NdTarget<I> nd_target(const Tensor& x, const Tensor& ind, int64_t b) {
  NdTarget<I> t{device_ptr<const I>(ind), {}};
  int64_t k = ind.shape().back(), tuples = 1;
  t.m.k = static_cast<int>(k);
  for (int64_t i = 0; i + 1 < ind.rank(); ++i) tuples *= ind.shape()[i];
  int64_t batch = 1;
  for (int64_t i = 0; i < b; ++i) batch *= x.shape()[i];
  t.m.per_batch = std::max<int64_t>(1, batch == 0 ? 1 : tuples / batch);
  for (int64_t j = 0; j < k; ++j) {
    t.m.dims[j] = x.shape()[b + j];
    t.m.rows_per_batch *= x.shape()[b + j];
  }
  for (int64_t i = b + k; i < x.rank(); ++i) t.m.slice *= x.shape()[i];
  return t;
}

// Runs f(map) with the map of this op and index dtype (after queueing the index checks).
template <typename F>
void with_target(const KernelContext& ctx, const char* op, bool nd, int64_t axis_or_batch, F&& f) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  auto go = [&](auto index) {
    using I = decltype(index);
    if (nd) {
      int64_t k = ind.shape().back();
      check_indices<I>(ctx, op, ind, k == 0 ? 0 : ind.numel() / k, k, axis_or_batch, x.shape());
      f(nd_target<I>(x, ind, axis_or_batch));
    } else {
      check_indices<I>(ctx, op, ind, ind.numel(), 1, axis_or_batch, x.shape());
      f(elem_target<I>(x, ind, axis_or_batch));
    }
  };
  if (ind.dtype() == DType::i64) go(int64_t{});
  else go(int32_t{});
}

template <typename F>
void by_size(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

void gather_family_gpu(KernelContext& ctx, const char* op, bool nd, int64_t axis_or_batch) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int device = ctx.device.index;
  int64_t n = y.numel();
  with_target(ctx, op, nd, axis_or_batch, [&](auto map) {
    if (n == 0) return;
    by_size(x.dtype(), [&](auto elem) {
      using E = decltype(elem);
      launch<gather_kernel<E, decltype(map)>>(grid_for(n, 256, device), 256, 0, stream(device),
                                              device_ptr<const E>(x), device_ptr<E>(y), n, map);
      PORTA_GPU_CHECK_LAUNCH(device, "gather_kernel");
    });
  });
}

void gather_elements_gpu(KernelContext& ctx) {
  gather_family_gpu(ctx, "GatherElements", false,
                    opdef::normalize_axis(ctx.attrs->get_int("axis"), ctx.in(0).rank(), "GatherElements"));
}
void gather_nd_gpu(KernelContext& ctx) { gather_family_gpu(ctx, "GatherND", true, ctx.attrs->get_int("batch_dims")); }

void scatter_family_gpu(KernelContext& ctx, const char* op, bool nd, int64_t axis) {
  const Tensor &x = ctx.in(0), &upd = ctx.in(2);
  Tensor& y = ctx.out(0);
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  ScatterReduction r = opdef::scatter_reduction(*ctx.attrs, op);
  if (y.numel() > 0)
    PORTA_GPU_CHECK(device, cudaMemcpyAsync(device_ptr<char>(y), device_ptr<const char>(x), y.nbytes(),
                                            cudaMemcpyDeviceToDevice, s));
  int64_t n = upd.numel();
  with_target(ctx, op, nd, axis, [&](auto map) {
    if (n == 0 || y.numel() == 0) return;
    unsigned grid = grid_for(n, 256, device);
    if (r == ScatterReduction::none) {
      Tensor owner = Tensor::empty({y.numel()}, DType::i32, ctx.device);
      PORTA_GPU_CHECK(device, cudaMemsetAsync(device_ptr<int>(owner), 0xff, owner.nbytes(), s));  // -1
      launch<claim_kernel<decltype(map)>>(grid, 256, 0, s, device_ptr<int>(owner), n, map);
      PORTA_GPU_CHECK_LAUNCH(device, "claim_kernel");
      by_size(x.dtype(), [&](auto elem) {
        using E = decltype(elem);
        launch<scatter_set_kernel<E, decltype(map)>>(grid, 256, 0, s, device_ptr<const E>(upd),
                                                     device_ptr<E>(y), device_ptr<const int>(owner), n, map);
        PORTA_GPU_CHECK_LAUNCH(device, "scatter_set_kernel");
      });
      return;
    }
    visit_gpu_dtype_in<kF32 | kF64 | kI32 | kI64>(x.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      auto run = [&](auto red) {
        constexpr int R = decltype(red)::value;
        launch<scatter_fold_kernel<R, T, decltype(map)>>(grid, 256, 0, s, device_ptr<const T>(upd),
                                                          device_ptr<T>(y), n, map);
        PORTA_GPU_CHECK_LAUNCH(device, "scatter_fold_kernel");
      };
      switch (r) {
        case ScatterReduction::add: run(std::integral_constant<int, static_cast<int>(ScatterReduction::add)>{}); break;
        case ScatterReduction::mul: run(std::integral_constant<int, static_cast<int>(ScatterReduction::mul)>{}); break;
        case ScatterReduction::max: run(std::integral_constant<int, static_cast<int>(ScatterReduction::max)>{}); break;
        default: run(std::integral_constant<int, static_cast<int>(ScatterReduction::min)>{}); break;
      }
    });
  });
}

void scatter_elements_gpu(KernelContext& ctx) {
  scatter_family_gpu(ctx, "ScatterElements", false,
                     opdef::normalize_axis(ctx.attrs->get_int("axis"), ctx.in(0).rank(), "ScatterElements"));
}
void scatter_nd_gpu(KernelContext& ctx) { scatter_family_gpu(ctx, "ScatterND", true, 0); }

std::string rank_supports(const KernelContext& ctx) {
  if (ctx.in(0).rank() > kMaxRank || ctx.in(1).rank() > kMaxRank)
    return str("rank above ", kMaxRank);
  DType it = ctx.in(1).dtype();
  if (it != DType::i64 && it != DType::i32) return str("indices of dtype ", dtype_name(it));
  return "";
}

std::string scatter_supports(const KernelContext& ctx) {
  if (auto why = rank_supports(ctx); !why.empty()) return why;
  // Positions of updates are claimed as int32 (reduction none) and outputs get an int32 scratch.
  if (ctx.in(2).numel() >= (int64_t{1} << 31) || ctx.in(0).numel() >= (int64_t{1} << 31))
    return "2^31 or more elements";
  ScatterReduction r = opdef::scatter_reduction(*ctx.attrs, ctx.op->name);
  DType t = ctx.in(0).dtype();
  if (r != ScatterReduction::none && !dtype_in(kF32 | kF64 | kI32 | kI64, t))
    return str("reduction ", opdef::reduction_name(r), " on ", dtype_name(t), " (atomics take 4- and 8-byte types)");
  return "";
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IF(GatherElements, kAllTypes, gather_elements_gpu, rank_supports)
PORTA_REGISTER_GPU_KERNEL_IF(GatherND, kAllTypes, gather_nd_gpu, rank_supports)
PORTA_REGISTER_GPU_KERNEL_IF(ScatterElements, kAllTypes, scatter_elements_gpu, scatter_supports)
PORTA_REGISTER_GPU_KERNEL_IF(ScatterND, kAllTypes, scatter_nd_gpu, scatter_supports)

}  // namespace porta::PORTA_GPU_NS
