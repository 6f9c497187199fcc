// porta cpu kernels — out-of-line parts of the elementwise helpers.
#include "kernels/cpu/elementwise_cpu.hpp"

#include <bit>

#include "backends/cpu/dnnl_context.hpp"

namespace porta::cpu::ew {

void unsupported_dtype(std::string_view op, DType t, DTypeSet allowed) {
  throw DTypeError(str("[", op, "] cpu kernel accepts ", dtype_set_names(allowed), ", got ",
                       dtype_name(t)));
}

void dnnl_eltwise_f32(const Tensor& src, Tensor& dst, dnnl::algorithm alg, float alpha, float beta) {
  int64_t n = src.numel();
  if (n == 0) return;
  std::string key = str("ew_eltwise:", static_cast<int>(alg), ":", std::bit_cast<uint32_t>(alpha), ":",
                        std::bit_cast<uint32_t>(beta), ":", n);
  auto prim = cached<dnnl::eltwise_forward>(key, [&] {
    dnnl::memory::desc md = plain_desc({n}, DType::f32);
    dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, md, alpha, beta);
    dnnl::eltwise_forward::primitive_desc pd(d, engine());
    return std::make_shared<dnnl::eltwise_forward>(pd);
  });
  dnnl::memory::desc md = plain_desc({n}, DType::f32);
  dnnl::memory s = wrap(src, md), o = wrap(dst, md);
  prim->execute(stream(), {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, o}});
  stream().wait();
}

}  // namespace porta::cpu::ew
