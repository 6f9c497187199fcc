// porta gpu kernels — Resize (nearest / linear / cubic over any axes, every coordinate
// transform of ops/resize.cpp). Two launches, no host wait: a small kernel builds per axis and
// output coordinate the taps (source offset, weight, count of non-zero taps, or -1 for the
// extrapolation value) in scratch memory, reading the scales and roi inputs on the device;
// then one thread per output element sums its taps' products. The tap rules mirror
// opdef::resize_axis (ops/resize.cpp), in double precision; the tf_crop_and_resize sum is
// written with explicit rounding so no fused multiply-add changes which side of the input
// range a coordinate falls on.
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/resize_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

constexpr int kResizeMaxRank = 8;

struct ResizeAxes {
  int rank = 0;
  int64_t in[kResizeMaxRank] = {}, out[kResizeMaxRank] = {}, in_stride[kResizeMaxRank] = {};
  int64_t table_offset[kResizeMaxRank] = {};  // first output coordinate entry of the axis
  double scale[kResizeMaxRank] = {}, length[kResizeMaxRank] = {};  // sizes given: from the host
};

struct ResizeRule {
  int mode = 0;      // 0 nearest, 1 linear, 2 cubic
  int coord = 0;     // ResizeAttrs::Coord order
  int nearest = 0;   // ResizeAttrs::Nearest order
  int taps = 1;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  const void* scales = nullptr;  // scales given: read on the device
  int scales_type = 0;           // 1 f32, 2 f64, 3 f16
  const void* roi = nullptr;     // tf_crop_and_resize
  int roi_type = 0;
};

__device__ __forceinline__ double load_param(const void* p, int type, int64_t i) {
  if (type == 2) return static_cast<const double*>(p)[i];
  if (type == 3) return static_cast<double>(__half2float(static_cast<const __half*>(p)[i]));
  return static_cast<double>(static_cast<const float*>(p)[i]);
}

// Entry e over all axes' output coordinates: taps of that coordinate.
__global__ void resize_tables_kernel(ResizeAxes d, ResizeRule rule, int64_t entries, int64_t* index,
                                     double* weight, int* count) {
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < entries; e += step) {
    int a = 0;
    while (a + 1 < d.rank && e >= d.table_offset[a + 1]) ++a;
    const int64_t o = e - d.table_offset[a];
    const double n = static_cast<double>(d.in[a]);
    double start = 0.0, end = 1.0;
    if (rule.coord == 4 && rule.roi) {
      start = load_param(rule.roi, rule.roi_type, a);
      end = load_param(rule.roi, rule.roi_type, d.rank + a);
    }
    double scale = d.scale[a], len = d.length[a];
    if (rule.scales) {
      scale = load_param(rule.scales, rule.scales_type, a);
      len = n * (end - start) * scale;
    }
    const double x = static_cast<double>(o);
    double xo = 0.0;
    bool outside = false;
    switch (rule.coord) {
      case 0: xo = (x + 0.5) / scale - 0.5; break;
      case 1: xo = len > 1 ? (x + 0.5) / scale - 0.5 : 0.0; break;
      case 2: xo = len == 1 ? 0.0 : x * (n - 1) / (len - 1); break;
      case 3: xo = x / scale; break;
      default:
        xo = len == 1 ? (end - start) * (n - 1) / 2 : x * (end - start) * (n - 1) / (len - 1);
        xo = __dadd_rn(xo, __dmul_rn(start, n - 1));
        outside = xo < 0 || xo > n - 1;
        break;
    }
    int64_t* idx = index + e * rule.taps;
    double* w = weight + e * rule.taps;
    if (outside) {
      count[e] = -1;
      continue;
    }
    const double fl = floor(xo);
    const int64_t x0 = static_cast<int64_t>(fl);
    const double t = xo - fl;
    int64_t ti[4] = {x0, x0 + 1, x0 + 2, x0 + 3};
    double tw[4] = {1.0, 0.0, 0.0, 0.0};
    if (rule.mode == 0) {
      int64_t i = x0;
      if (t != 0) {
        switch (rule.nearest) {
          case 0: i = t <= 0.5 ? x0 : x0 + 1; break;
          case 1: i = t < 0.5 ? x0 : x0 + 1; break;
          case 2: i = x0; break;
          default: i = x0 + 1; break;
        }
      }
      ti[0] = i;
    } else if (rule.mode == 1) {
      tw[0] = 1 - t;
      tw[1] = t;
    } else {
      const double A = rule.cubic_a, u = 1 - t;
      for (int k = 0; k < 4; ++k) ti[k] = x0 - 1 + k;
      tw[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
      tw[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
      tw[2] = ((A + 2) * u - (A + 3)) * u * u + 1;
      tw[3] = ((A * (u + 1) - 5 * A) * (u + 1) + 8 * A) * (u + 1) - 4 * A;
    }
    if (rule.exclude_outside && rule.mode != 0) {
      double sum = 0;
      for (int k = 0; k < rule.taps; ++k) {
        if (ti[k] < 0 || ti[k] >= d.in[a]) tw[k] = 0;
        sum += tw[k];
      }
      if (sum != 0)
        for (int k = 0; k < rule.taps; ++k) tw[k] /= sum;
    }
    int c = 0;
    for (int k = 0; k < rule.taps; ++k) {
      if (tw[k] == 0) continue;
      const int64_t i = ti[k] < 0 ? 0 : ti[k] >= d.in[a] ? d.in[a] - 1 : ti[k];
      idx[c] = i * d.in_stride[a];
      w[c] = tw[k];
      ++c;
    }
    count[e] = c;
  }
}

template <typename T>
__global__ void resize_kernel(const T* x, T* y, int64_t total, ResizeAxes d, int taps, const int64_t* index,
                              const double* weight, const int* count, double extrapolation) {
  using A = acc_t<T>;
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < total; w += step) {
    int64_t rest = w, base[kResizeMaxRank];
    int cnt[kResizeMaxRank];
    int64_t combos = 1;
    bool outside = false;
    for (int a = d.rank - 1; a >= 0; --a) {
      const int64_t o = rest % d.out[a];
      rest /= d.out[a];
      const int64_t e = d.table_offset[a] + o;
      cnt[a] = count[e];
      base[a] = e * taps;
      outside |= cnt[a] < 0;
      combos *= cnt[a] < 0 ? 0 : cnt[a];
    }
    if (outside) {
      y[w] = store_acc<T>(static_cast<A>(extrapolation));
      continue;
    }
    A acc = 0;
    for (int64_t c = 0; c < combos; ++c) {
      int64_t r = c, off = 0;
      A wt = 1;
      for (int a = d.rank - 1; a >= 0; --a) {
        const int k = static_cast<int>(r % cnt[a]);
        r /= cnt[a];
        off += index[base[a] + k];
        wt *= static_cast<A>(weight[base[a] + k]);
      }
      acc += wt * load_acc<T>(x[off]);
    }
    y[w] = store_acc<T>(acc);
  }
}

std::string resize_supports(const KernelContext& ctx) {
  if (ctx.in(0).rank() > kResizeMaxRank)
    return str("rank ", ctx.in(0).rank(), " is above the gpu kernel's ", kResizeMaxRank);
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!ctx.has_input(i) || ctx.in(i).numel() == 0) continue;
    DType t = ctx.in(i).dtype();
    if (t != DType::f32 && t != DType::f64 && t != DType::f16)
      return str(i == 1 ? "roi" : "scales", " of dtype ", dtype_name(t));
  }
  return "";
}

const void* raw_device_ptr(const Tensor& t) {
  return static_cast<const char*>(t.storage()->handle()) + t.offset() * dtype_size(t.dtype());
}

int param_type(DType t) { return t == DType::f64 ? 2 : t == DType::f16 ? 3 : 1; }

// The input on this device (sessions and eager calls place it there), else a device copy.
Tensor on_device(const Tensor& t, Device device) { return t.device() == device ? t : t.to(device); }

void resize_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int64_t total = y.numel();
  if (total == 0) return;
  const opdef::ResizeAttrs a = opdef::resize_attrs(*ctx.attrs);
  const int device = ctx.device.index;
  ResizeAxes d;
  d.rank = x.rank();
  std::vector<int64_t> strides = contiguous_strides(x.shape());
  int64_t entries = 0;
  for (int i = 0; i < d.rank; ++i) {
    d.in[i] = x.shape()[i];
    d.out[i] = y.shape()[i];
    d.in_stride[i] = strides[i];
    d.table_offset[i] = entries;
    entries += d.out[i];
    d.scale[i] = static_cast<double>(d.out[i]) / static_cast<double>(d.in[i]);  // sizes: out / in
    d.length[i] = static_cast<double>(d.out[i]);
  }
  ResizeRule rule;
  rule.mode = static_cast<int>(a.mode);
  rule.coord = static_cast<int>(a.coord);
  rule.nearest = static_cast<int>(a.nearest);
  rule.taps = a.mode == opdef::ResizeAttrs::Mode::nearest ? 1 : a.mode == opdef::ResizeAttrs::Mode::linear ? 2 : 4;
  rule.cubic_a = a.cubic_a;
  rule.exclude_outside = a.exclude_outside;
  const bool has_scales = ctx.has_input(2) && ctx.in(2).numel() > 0;
  const bool has_sizes = ctx.has_input(3) && ctx.in(3).numel() > 0;
  if (has_scales == has_sizes)
    throw InvalidArgument("[Resize] expected exactly one of scales and sizes (non-empty)");
  Tensor scales, roi;
  if (has_scales) {
    scales = on_device(ctx.in(2), ctx.device);
    rule.scales = raw_device_ptr(scales);
    rule.scales_type = param_type(scales.dtype());
  }
  if (a.coord == opdef::ResizeAttrs::Coord::tf_crop_and_resize && ctx.has_input(1)) {
    roi = on_device(ctx.in(1), ctx.device);
    rule.roi = raw_device_ptr(roi);
    rule.roi_type = param_type(roi.dtype());
  }
  Tensor index = Tensor::empty({entries * rule.taps}, DType::i64, ctx.device);
  Tensor weight = Tensor::empty({entries * rule.taps}, DType::f64, ctx.device);
  Tensor count = Tensor::empty({entries}, DType::i32, ctx.device);
  launch<resize_tables_kernel>(grid_for(entries, 128, device), 128, 0, stream(device),
      d, rule, entries, device_ptr<int64_t>(index), device_ptr<double>(weight), device_ptr<int>(count));
  PORTA_GPU_CHECK_LAUNCH(device, "resize_tables_kernel");
  visit_gpu_dtype_in<kFloats>(x.dtype(), "Resize", [&](auto tag) {
    using T = decltype(tag);
    launch<resize_kernel<T>>(grid_for(total, 256, device), 256, 0, stream(device),
        device_ptr<const T>(x), device_ptr<T>(y), total, d, rule.taps, device_ptr<const int64_t>(index),
        device_ptr<const double>(weight), device_ptr<const int>(count), a.extrapolation);
    PORTA_GPU_CHECK_LAUNCH(device, "resize_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IF(Resize, kFloats, resize_gpu, resize_supports)

}  // namespace porta::PORTA_GPU_NS
