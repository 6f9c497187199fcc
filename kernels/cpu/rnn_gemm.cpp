// porta cpu kernels — c = a . b^T for the recurrent ops: oneDNN's matmul for f32 (cached
// per shape), plain dot-product loops for f64.
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/dnnl_context.hpp"
#include "kernels/cpu/rnn_common.hpp"

namespace porta::cpu {

namespace {

// A ready-to-run product of one shape: primitive plus memory objects whose data pointers are
// swapped per call. LSTM/GRU call the same shape once per time step, so this skips the
// string key, the shared cache's lock and three memory constructions every step.
struct AbtEntry {
  int64_t m = -1, n = -1, k = -1;
  int threads = 0;
  std::shared_ptr<dnnl::matmul> prim;
  dnnl::memory a, b, c;
};

AbtEntry& abt_entry(int64_t m, int64_t n, int64_t k) {
  thread_local AbtEntry entries[8];
  thread_local unsigned next = 0;
  int threads = omp_get_max_threads();
  for (AbtEntry& e : entries)
    if (e.m == m && e.n == n && e.k == k && e.threads == threads) return e;
  AbtEntry& e = entries[next++ % 8];
  using dnnl::memory;
  memory::desc a_md({m, k}, memory::data_type::f32, memory::dims{k, 1});
  memory::desc b_md({k, n}, memory::data_type::f32, memory::dims{1, k});  // b is [n, k] row-major
  memory::desc c_md({m, n}, memory::data_type::f32, memory::dims{n, 1});
  e.prim = cached<dnnl::matmul>(str("rnn_gemm_abt:", m, "x", n, "x", k), [&] {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine());
    return std::make_shared<dnnl::matmul>(pd);
  });
  e.a = memory(a_md, engine(), nullptr);
  e.b = memory(b_md, engine(), nullptr);
  e.c = memory(c_md, engine(), nullptr);
  e.m = m, e.n = n, e.k = k, e.threads = threads;
  return e;
}

}  // namespace

void gemm_abt(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    std::fill_n(c, m * n, 0.0f);
    return;
  }
  AbtEntry& e = abt_entry(m, n, k);
  e.a.set_data_handle(const_cast<float*>(a));
  e.b.set_data_handle(const_cast<float*>(b));
  e.c.set_data_handle(c);
  e.prim->execute(stream(), {{DNNL_ARG_SRC, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {DNNL_ARG_DST, e.c}});
  stream().wait();
}

void gemm_abt(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k) {
  parallel_for(m, std::max<int64_t>(1, 8192 / std::max<int64_t>(n * k, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = dot(a + i * k, b + j * k, k);
  });
}

}  // namespace porta::cpu
