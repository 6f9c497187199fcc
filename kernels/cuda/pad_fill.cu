// porta gpu kernels — Pad (constant / reflect / edge, negative pads crop), Range and
// ConstantOfShape: outputs written from a rule, one thread per output element.
//
// Their small inputs (Pad's pads and constant_value, Range's start and delta) are read by the
// kernels from device memory: the output shape already encodes what the host needed, so no
// value is copied back and no host wait happens. Elements move by size (1/2/4/8 bytes), so
// Pad and ConstantOfShape share four instantiations across dtypes.
#include <algorithm>
#include <cstring>

#include "kernels/cuda/elementwise.cuh"
#include "ops/shape_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

enum class PadMode : int { constant, reflect, edge };

struct PadDims {
  int rank = 0;
  int64_t out[kMaxDims] = {}, in[kMaxDims] = {}, in_stride[kMaxDims] = {};
};

// Input index output index o of an axis reads, or -1 for the constant (opdef::pad_source_index).
__device__ __forceinline__ int64_t pad_source(int64_t o, int64_t begin, int64_t dim, PadMode mode) {
  int64_t i = o - begin;
  if (i >= 0 && i < dim) return i;
  if (mode == PadMode::edge) return dim == 0 ? -1 : (i < 0 ? 0 : dim - 1);
  if (mode == PadMode::reflect && dim > 1) {
    if (i < 0) i = -i;
    if (i >= dim) i = 2 * (dim - 1) - i;
    return i >= 0 && i < dim ? i : -1;
  }
  if (mode == PadMode::reflect && dim == 1) return 0;
  return -1;
}

// pads: begins then ends (i64 or i32); value: one element, or null for 0.
template <typename E, typename P>
__global__ void pad_kernel(const E* src, E* dst, int64_t total, PadDims d, const P* pads,
                           const E* value, PadMode mode) {
  const E fill = value ? value[0] : E{};
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < total; w += step) {
    int64_t rest = w, offset = 0;
    bool inside = true;
    for (int a = d.rank - 1; a >= 0; --a) {
      const int64_t o = rest % d.out[a];
      rest /= d.out[a];
      const int64_t s = pad_source(o, static_cast<int64_t>(pads[a]), d.in[a], mode);
      inside &= s >= 0;
      offset += s * d.in_stride[a];
    }
    dst[w] = inside ? src[offset] : fill;
  }
}

// A tensor the kernel may read: the input itself when it is on this device (the usual case:
// sessions and eager calls place inputs there), else a device copy.
Tensor on_device(const Tensor& t, Device device) { return t.device() == device ? t : t.to(device); }

template <typename E>
void pad_typed(KernelContext& ctx, const PadDims& d, const Tensor& pads, PadMode mode) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int device = ctx.device.index;
  Tensor value = ctx.has_input(2) ? on_device(ctx.in(2), ctx.device) : Tensor();
  const E* value_ptr = value.defined() ? device_ptr<const E>(value) : nullptr;
  const int64_t total = y.numel();
  auto launch_for = [&](auto pad_tag) {
    using P = decltype(pad_tag);
    launch<pad_kernel<E, P>>(grid_for(total, 256, device), 256, 0, stream(device),
        device_ptr<const E>(x), device_ptr<E>(y), total, d, device_ptr<const P>(pads), value_ptr, mode);
  };
  if (pads.dtype() == DType::i64) launch_for(int64_t{});
  else launch_for(int32_t{});
  PORTA_GPU_CHECK_LAUNCH(device, "pad_kernel");
}

std::string pad_supports(const KernelContext& ctx) {
  if (ctx.in(0).rank() > kMaxDims)
    return str("rank ", ctx.in(0).rank(), " is above the gpu kernel's ", kMaxDims);
  return "";
}

void pad_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const std::string mode_name = ctx.attrs->get_string("mode");
  const PadMode mode = mode_name == "reflect" ? PadMode::reflect
                       : mode_name == "edge"  ? PadMode::edge
                                              : PadMode::constant;
  PadDims d;
  d.rank = x.rank();
  std::vector<int64_t> strides = contiguous_strides(x.shape());
  for (int a = 0; a < d.rank; ++a) {
    d.out[a] = y.shape()[a];
    d.in[a] = x.shape()[a];
    d.in_stride[a] = strides[a];
  }
  Tensor pads = on_device(ctx.in(1), ctx.device);
  switch (dtype_size(x.dtype())) {
    case 1: pad_typed<uint8_t>(ctx, d, pads, mode); break;
    case 2: pad_typed<uint16_t>(ctx, d, pads, mode); break;
    case 4: pad_typed<uint32_t>(ctx, d, pads, mode); break;
    default: pad_typed<uint64_t>(ctx, d, pads, mode); break;
  }
}

// y[i] = start + i * delta: in int64 for integer types (wrapping to T), in double for floats.
template <typename T>
__global__ void range_kernel(T* y, int64_t n, const T* start, const T* delta) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) {
    if constexpr (std::is_integral_v<T>) {
      const int64_t v = static_cast<int64_t>(static_cast<uint64_t>(start[0]) +
                                             static_cast<uint64_t>(i) * static_cast<uint64_t>(static_cast<int64_t>(delta[0])));
      y[i] = static_cast<T>(v);
    } else {
      const double v = static_cast<double>(load_acc<T>(start[0])) +
                       static_cast<double>(i) * static_cast<double>(load_acc<T>(delta[0]));
      y[i] = store_acc<T>(static_cast<acc_t<T>>(v));
    }
  }
}

void range_gpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const int device = ctx.device.index;
  Tensor start = on_device(ctx.in(0), ctx.device), delta = on_device(ctx.in(2), ctx.device);
  visit_gpu_dtype_in<kNumeric>(y.dtype(), "Range", [&](auto tag) {
    using T = decltype(tag);
    launch<range_kernel<T>>(grid_for(n, 256, device), 256, 0, stream(device),
        device_ptr<T>(y), n, device_ptr<const T>(start), device_ptr<const T>(delta));
    PORTA_GPU_CHECK_LAUNCH(device, "range_kernel");
  });
}

template <typename E>
__global__ void fill_kernel(E* y, int64_t n, E value) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += step) y[i] = value;
}

void constant_of_shape_gpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  const int64_t n = y.numel();
  if (n == 0) return;
  const size_t elem = dtype_size(y.dtype());
  uint64_t bits = 0;  // default: f32 0 (all-zero bits)
  if (ctx.attrs->has("value")) {
    Tensor v = ctx.attrs->get_tensor("value").to(Device::cpu()).contiguous();
    std::memcpy(&bits, v.raw_data(), elem);
  }
  const int device = ctx.device.index;
  cudaStream_t s = stream(device);
  auto launch_for = [&](auto tag) {
    using E = decltype(tag);
    E value;
    std::memcpy(&value, &bits, sizeof(E));
    launch<fill_kernel<E>>(grid_for(n, 256, device), 256, 0, s, device_ptr<E>(y), n, value);
  };
  switch (elem) {
    case 1: launch_for(uint8_t{}); break;
    case 2: launch_for(uint16_t{}); break;
    case 4: launch_for(uint32_t{}); break;
    default: launch_for(uint64_t{}); break;
  }
  PORTA_GPU_CHECK_LAUNCH(device, "fill_kernel");
}

// Shape: the dims (a slice of them) travel as kernel arguments, so nothing is copied from the
// host (sessions fold Shape at compile time; this serves eager calls on device tensors).
struct ShapeValues {
  int64_t v[kMaxDims] = {};
};

__global__ void shape_kernel(int64_t* y, int64_t n, ShapeValues dims) {
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) y[i] = dims.v[i];
}

std::string shape_supports(const KernelContext& ctx) {
  if (ctx.in(0).rank() > kMaxDims)
    return str("rank ", ctx.in(0).rank(), " is above the gpu kernel's ", kMaxDims);
  return "";
}

void shape_gpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  const std::vector<int64_t> dims = opdef::shape_dims(ctx.in(0).shape(), *ctx.attrs);
  const int64_t n = static_cast<int64_t>(dims.size());
  if (n == 0) return;
  ShapeValues values;
  std::copy(dims.begin(), dims.end(), values.v);
  const int device = ctx.device.index;
  launch<shape_kernel>(1, 64, 0, stream(device), device_ptr<int64_t>(y), n, values);
  PORTA_GPU_CHECK_LAUNCH(device, "shape_kernel");
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_STRIDED(Shape, kAllTypes, shape_gpu, shape_supports)
PORTA_REGISTER_GPU_KERNEL_IF(Pad, kAllTypes, pad_gpu, pad_supports)
PORTA_REGISTER_GPU_KERNEL(Range, kNumeric, range_gpu)
PORTA_REGISTER_GPU_KERNEL(ConstantOfShape, kAllTypes, constant_of_shape_gpu)

}  // namespace porta::PORTA_GPU_NS
