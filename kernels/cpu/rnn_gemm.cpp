// porta cpu kernels — c = a . b^T for the recurrent ops: oneDNN's matmul for f32 (cached
// per shape), plain dot-product loops for f64.
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/dnnl_context.hpp"
#include "kernels/cpu/rnn_common.hpp"

namespace porta::cpu {

void gemm_abt(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill_n(c, m * n, 0.0f);
    return;
  }
  using dnnl::memory;
  memory::desc a_md({m, k}, memory::data_type::f32, memory::dims{k, 1});
  memory::desc b_md({k, n}, memory::data_type::f32, memory::dims{1, k});  // b is [n, k] row-major
  memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{n, 1});
  auto prim = cached<dnnl::matmul>(str("rnn_gemm_abt:", m, "x", n, "x", k), [&] {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine());
    return std::make_shared<dnnl::matmul>(pd);
  });
  memory am(a_md, engine(), const_cast<float*>(a)), bm(b_md, engine(), const_cast<float*>(b)), cm(c_md, engine(), c);
  prim->execute(stream(), {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream().wait();
}

void gemm_abt(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k) {
  parallel_for(m, std::max<int64_t>(1, 8192 / std::max<int64_t>(n * k, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = dot(a + i * k, b + j * k, k);
  });
}

}  // namespace porta::cpu
