// porta cpu kernels — the input projections of the recurrent ops: c = a . b^T with oneDNN's
// matmul for f32 (cached per shape), plain dot-product loops for f64; and for a
// session-constant W, a matmul that takes W in the layout oneDNN picks, reordered once
// (weights_for): with W as transposed strides the matmul repacked it on every call (lstm_lm at
// one thread: 2.9 -> 2.6 ms).
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/dnnl_context.hpp"
#include "kernels/cpu/custom_vmath.hpp"
#include "kernels/cpu/dnn_layout.hpp"
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

// The input projection's matmul, x [rows, k] times W^T in the layout oneDNN picks, in `t` (f32,
// or bf16 operands with an f32 result), or why oneDNN refused it.
std::shared_ptr<MaybePrimitive<dnnl::matmul>> projection_primitive(int64_t rows, int64_t outs, int64_t k, DType t) {
  using dnnl::memory;
  return cached<MaybePrimitive<dnnl::matmul>>(dnn_key("rnn_projection", t, rows, outs, k), [&] {
    auto r = std::make_shared<MaybePrimitive<dnnl::matmul>>();
    try {
      memory::desc w_any(dims_of({k, outs}), dnnl_type(t), memory::format_tag::any);
      r->pd = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(plain_desc({rows, k}, t), w_any, plain_desc({rows, outs}, DType::f32)), engine());
      r->prim = dnnl::matmul(r->pd);
      r->ok = true;
    } catch (const dnnl::error& e) {
      r->why = e.what();
    }
    return r;
  });
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

void project_input(const KernelContext& ctx, int64_t d, const float* x, const float* bias_a, const float* bias_b,
                   int64_t rows, int64_t k, int64_t outs, float* out) {
  const Tensor& w = ctx.in(1);
  const float* wd = w.data<float>() + d * outs * k;
  if (!ctx.is_constant_input(1) || rows == 0 || outs == 0 || k == 0)
    return project(x, wd, bias_a, bias_b, rows, k, outs, out);
  auto w_plain = strided_desc({k, outs}, {1, k}, DType::f32);  // W_d is [outs, k] row-major
  auto p = projection_primitive(rows, outs, k, DType::f32);
  if (!p->ok) return project(x, wd, bias_a, bias_b, rows, k, outs, out);
  // Direction d's own view, so each direction's reordered copy has its own cache entry. The
  // layout oneDNN 2.6 picks for W does not depend on the row count (checked for 1 to 64000
  // rows), so sequences of any length share one copy.
  Tensor wv = w.slice(0, d, d + 1);
  execute(p->prim, {{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), x)},
                    {DNNL_ARG_WEIGHTS, weights_for(wv, wrap_ptr(w_plain, wd), p->pd.weights_desc(), true)},
                    {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), out)}});
  add_biases(bias_a, bias_b, rows, outs, out);
}

void project_input_bf16(const KernelContext& ctx, int64_t d, const float* x, const float* bias_a,
                        const float* bias_b, int64_t rows, int64_t k, int64_t outs, float* out) {
  const Tensor& w = ctx.in(1);
  const float* wd = w.data<float>() + d * outs * k;
  if (rows == 0 || outs == 0 || k == 0) return project(x, wd, bias_a, bias_b, rows, k, outs, out);
  auto w_plain = strided_desc({k, outs}, {1, k}, DType::f32);  // W_d is [outs, k] row-major
  auto p = projection_primitive(rows, outs, k, DType::bf16);
  // No bf16 matmul on this CPU (oneDNN needs AVX-512 for it): f32, the more accurate answer.
  if (!p->ok) return project_input(ctx, d, x, bias_a, bias_b, rows, k, outs, out);
  thread_local std::vector<uint16_t> xb;
  xb.resize(static_cast<size_t>(rows * k));
  vmath::f32_to_bf16_n(x, xb.data(), rows * k);
  Tensor wv = w.slice(0, d, d + 1);
  execute(p->prim, {{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), xb.data())},
                    {DNNL_ARG_WEIGHTS, weights_for(wv, wrap_ptr(w_plain, wd), p->pd.weights_desc(), ctx.is_constant_input(1))},
                    {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), out)}});
  add_biases(bias_a, bias_b, rows, outs, out);
}

void project_input(const KernelContext& ctx, int64_t d, const double* x, const double* bias_a, const double* bias_b,
                   int64_t rows, int64_t k, int64_t outs, double* out) {
  project(x, ctx.in(1).data<double>() + d * outs * k, bias_a, bias_b, rows, k, outs, out);
}

void gemm_abt(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k) {
  parallel_for(m, std::max<int64_t>(1, 8192 / std::max<int64_t>(n * k, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * n + j] = dot(a + i * k, b + j * k, k);
  });
}

}  // namespace porta::cpu
