// Softmax / LogSoftmax on cpu, three implementations tried in order:
// - "rows" (f32, softmax along the last axis, the common case: attention, classifier heads):
//   porta's own row loop;
// - "onednn" (f32 along other axes, bf16): oneDNN's softmax_v2 (softmax_accurate / softmax_log);
// - f64: a three-pass scalar loop (max, sum of exp, normalize).
#include <cmath>
#include <vector>

#include "kernels/cpu/custom_vmath.hpp"
#include "kernels/cpu/dnn_util.hpp"
#include "ops/order_util.hpp"

namespace porta::cpu {
namespace {

using SoftmaxPrimitive = MaybePrimitive<dnnl::softmax_v2_forward>;

void softmax_loop(const double* x, double* y, const Shape& v, bool log) {
  int64_t len = v[1], inner = v[2];
  parallel_for(v[0] * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t base = (r / inner) * len * inner + r % inner;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, x[base + j * inner]);
      for (int64_t j = 0; j < len; ++j) sum += std::exp(x[base + j * inner] - mx);
      double lsum = std::log(sum);
      for (int64_t j = 0; j < len; ++j) {
        double d = x[base + j * inner] - mx;
        y[base + j * inner] = log ? d - lsum : std::exp(d) / sum;
      }
    }
  });
}

// Rows of len floats, softmax along each row: the max; then exp(x - max) and its sum into a
// per-thread buffer (LogSoftmax only sums); then y written once, streamed past the caches when
// the output is large: y = e / sum, or y = (x - max) - log(sum). oneDNN's softmax took 7.3 ms
// on 4096x4096 here against 3.3 ms for an Exp pass: this loop reads x twice from cache and
// writes y once. Rows longer than the buffer work in y itself.
void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t len, bool log) {
  constexpr int64_t kRowBuffer = 16384;  // 64 KiB: stays in L2 between the two passes
  bool stream = vmath::streaming_output(rows * len * static_cast<int64_t>(sizeof(float)));
  parallel_for(rows, std::max<int64_t>(1, 4096 / len), [&](int64_t r0, int64_t r1) {
    std::vector<float> buf(!log && len <= kRowBuffer ? len : 0);
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * len;
      float* yr = y + r * len;
      const float* next = r + 1 < r1 && len <= kRowBuffer ? xr + len : nullptr;
      float mx = vmath::max_f32(xr, len);  // NaNs are skipped here and reach the sum below
      if (log) {
        float sum = vmath::exp_shifted_sum_to_f32(xr, mx, nullptr, len, next);
        vmath::sub2_f32(xr, mx, std::log(sum), yr, len, stream);
      } else if (!buf.empty()) {
        float sum = vmath::exp_shifted_sum_to_f32(xr, mx, buf.data(), len, next);
        vmath::affine_f32(buf.data(), 1.f / sum, 0.f, yr, len, stream);
      } else {
        float sum = vmath::exp_shifted_sum_to_f32(xr, mx, yr, len);
        vmath::affine_f32(yr, 1.f / sum, 0.f, yr, len, false);
      }
    }
  });
}

// The view outer x len x inner of input 0 with the softmax along the middle axis.
Shape softmax_view(const KernelContext& ctx) {
  const opdef::AxisSplit g = opdef::split_at_axis_attr(ctx);
  return {g.outer, g.n, g.inner};
}

void softmax_rows(KernelContext& ctx, bool log) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (x.numel() == 0) return;
  const Shape v = softmax_view(ctx);
  softmax_rows_f32(x.data<float>(), y.data<float>(), v[0], v[1], log);
}

std::string rows_supports(const KernelContext& ctx) {
  const Shape v = softmax_view(ctx);
  if (v[2] != 1)
    return str("the axis is not the innermost one (", v[2], " elements after it): the row loop reads rows");
  return "";
}

// oneDNN's softmax over x into y (both of x's dtype) seen as `v`; false when oneDNN has no
// primitive for it (bf16 needs AVX-512), with why in `why`.
bool softmax_primitive(const Tensor& x, Tensor& y, const Shape& v, bool log, std::string& why) {
  auto p = cached<SoftmaxPrimitive>(dnn_key(log ? "logsoftmax" : "softmax", x.dtype(), v), [&] {
    auto r = std::make_shared<SoftmaxPrimitive>();
    try {
      auto md = plain_desc(v, x.dtype());
      dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference,
                                       log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate,
                                       md, md, 1);
      r->pd = dnnl::softmax_v2_forward::primitive_desc(d, engine());
      r->prim = dnnl::softmax_v2_forward(r->pd);
      r->ok = true;
    } catch (const dnnl::error& e) {
      r->why = e.what();
    }
    return r;
  });
  if (!p->ok) {
    why = p->why;
    return false;
  }
  execute(p->prim, {{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), x.raw_data())},
                    {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), y.raw_data())}});
  return true;
}

// A bf16 call on a CPU where oneDNN has no bf16 softmax computes in f32 and rounds once (the
// more accurate answer; the row loop's own path is f32 only).
void softmax_onednn(KernelContext& ctx, bool log) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (x.numel() == 0) return;
  const Shape v = softmax_view(ctx);
  std::string why;
  if (softmax_primitive(x, y, v, log, why)) return;
  if (x.dtype() == DType::bf16) {
    Tensor x32 = x.cast(DType::f32), y32 = Tensor::empty(x.shape(), DType::f32);
    std::string why32;
    if (softmax_primitive(x32, y32, v, log, why32)) {
      y.copy_(y32.cast(DType::bf16));
      return;
    }
  }
  throw BackendError(str("[", ctx.op->name, "] oneDNN refused ", dtype_name(x.dtype()), " ", shape_str(x.shape()),
                         ": ", why));
}

void softmax_f64(KernelContext& ctx, bool log) {
  if (ctx.in(0).numel() == 0) return;
  softmax_loop(ctx.in(0).data<double>(), ctx.out(0).data<double>(), softmax_view(ctx), log);
}

void softmax_rows_kernel(KernelContext& ctx) { softmax_rows(ctx, false); }
void log_softmax_rows_kernel(KernelContext& ctx) { softmax_rows(ctx, true); }
void softmax_onednn_kernel(KernelContext& ctx) { softmax_onednn(ctx, false); }
void log_softmax_onednn_kernel(KernelContext& ctx) { softmax_onednn(ctx, true); }
void softmax_f64_kernel(KernelContext& ctx) { softmax_f64(ctx, false); }
void log_softmax_f64_kernel(KernelContext& ctx) { softmax_f64(ctx, true); }

}  // namespace

PORTA_REGISTER_KERNEL(Softmax, cpu, kF32, softmax_rows_kernel, rows_supports, (KernelImpl{"rows", 1}))
PORTA_REGISTER_KERNEL(Softmax, cpu, kF32 | kBF16, softmax_onednn_kernel, nullptr, (KernelImpl{"onednn", 0}))
PORTA_REGISTER_KERNEL(Softmax, cpu, kF64, softmax_f64_kernel)
PORTA_REGISTER_KERNEL(LogSoftmax, cpu, kF32, log_softmax_rows_kernel, rows_supports, (KernelImpl{"rows", 1}))
PORTA_REGISTER_KERNEL(LogSoftmax, cpu, kF32 | kBF16, log_softmax_onednn_kernel, nullptr, (KernelImpl{"onednn", 0}))
PORTA_REGISTER_KERNEL(LogSoftmax, cpu, kF64, log_softmax_f64_kernel)

}  // namespace porta::cpu
