// Softmax / LogSoftmax on cpu: oneDNN's softmax_v2 (softmax_accurate / softmax_log) for
// f32 and bf16, a three-pass loop for f64 (max, sum of exp, normalize).
#include <cmath>

#include "kernels/cpu/dnn_util.hpp"
#include "ops/common.hpp"

namespace porta::cpu {
namespace {

using SoftmaxPrimitive = MaybePrimitive<dnnl::softmax_v2_forward>;

// The tensor seen as outer x len x inner with the softmax along the middle axis.
Shape softmax_view(const Tensor& x, int64_t axis) {
  int64_t len = x.rank() == 0 ? 1 : x.shape()[axis], outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int64_t i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  return {outer, len, inner};
}

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

void softmax_cpu(KernelContext& ctx, bool log) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (x.numel() == 0) return;
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), ctx.op->name);
  Shape v = softmax_view(x, axis);
  if (x.dtype() == DType::f64) return softmax_loop(x.data<double>(), y.data<double>(), v, log);
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
  if (!p->ok)
    throw BackendError(str("[", ctx.op->name, "] oneDNN refused ", dtype_name(x.dtype()), " ",
                           shape_str(x.shape()), ": ", p->why));
  execute(p->prim, {{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), x.raw_data())},
                    {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), y.raw_data())}});
}

void softmax_kernel(KernelContext& ctx) { softmax_cpu(ctx, false); }
void log_softmax_kernel(KernelContext& ctx) { softmax_cpu(ctx, true); }

}  // namespace

PORTA_REGISTER_KERNEL(Softmax, cpu, kF32 | kF64 | kBF16, softmax_kernel)
PORTA_REGISTER_KERNEL(LogSoftmax, cpu, kF32 | kF64 | kBF16, log_softmax_kernel)

}  // namespace porta::cpu
