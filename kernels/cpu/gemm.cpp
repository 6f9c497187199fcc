// Gemm on cpu. f32: one oneDNN matmul whose source/weights descriptors carry transA/transB as
// strides (no transposed copies), alpha as the output scale, and C either as the primitive's
// bias (alpha = beta = 1, the Linear layers PyTorch exports: no extra pass over y) or as a
// beta * C sum post-op over a destination prefilled with C broadcast. B that is a session
// constant (a Linear layer's weight) is handed to oneDNN in the layout the primitive picks,
// reordered once (weights_for): with B as transB strides brgemm repacked it on every call,
// half the time of mlp's 4x64x128 products. bf16/f16: the same primitive (oneDNN accumulates
// in f32), or, where oneDNN has no implementation for the type on this machine, f32 and one
// rounding at the end; Y may be f32 then (KernelDef::f32_output: the accumulators unrounded).
// f64: a plain loop.
#include <cstring>

#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/fused_activation.hpp"
#include "kernels/cpu/gemv.hpp"
#include "kernels/cpu/panels.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "kernels/cpu/vector_width.hpp"

namespace porta::cpu {
namespace {

struct GemmCall {
  int64_t m, n, k;
  bool ta, tb, has_c;
  double alpha, beta;
  bool c_as_bias = false;  // C added by the primitive as a (broadcast) bias
  Shape c_dims;            // C as 2-d {rows, cols} (1 where it broadcasts), when c_as_bias
};

GemmCall gemm_call(const KernelContext& ctx) {
  const Attributes& at = *ctx.attrs;
  GemmCall g;
  g.ta = at.get_int("transA") != 0;
  g.tb = at.get_int("transB") != 0;
  g.m = ctx.outputs.at(0).dim(0);
  g.n = ctx.outputs.at(0).dim(1);
  g.k = g.ta ? ctx.in(0).dim(0) : ctx.in(0).dim(1);
  g.has_c = ctx.has_input(2) && at.get_float("beta") != 0.0;
  g.alpha = at.get_float("alpha");
  g.beta = at.get_float("beta");
  const DType c_type = g.has_c ? ctx.in(2).dtype() : DType::f32;
  if (g.has_c && g.alpha == 1.0 && g.beta == 1.0 && (c_type == ctx.in(0).dtype() || c_type == ctx.outputs.at(0).dtype())) {
    const Shape& c = ctx.in(2).shape();
    Shape dims = c.size() == 2 ? c : c.size() == 1 ? Shape{1, c[0]} : Shape{1, 1};
    g.c_as_bias = c.size() <= 2;
    g.c_dims = dims;
  }
  return g;
}

// Writes C broadcast to y (or zeros when there is no C).
void fill_with_c(KernelContext& ctx, const GemmCall& g) {
  Tensor& y = ctx.out(0);
  if (g.has_c && ctx.in(2).dtype() != y.dtype()) y.copy_(ctx.in(2).cast(y.dtype()).expand(y.shape()));
  else if (g.has_c) y.copy_(ctx.in(2).expand(y.shape()));
  else std::memset(y.raw_data(), 0, y.nbytes());
}

template <typename T>
void gemm_loop(KernelContext& ctx, const GemmCall& g) {
  const T *a = ctx.in(0).data<T>(), *b = ctx.in(1).data<T>();
  T* y = ctx.out(0).data<T>();
  fill_with_c(ctx, g);
  T alpha = static_cast<T>(g.alpha), beta = g.has_c ? static_cast<T>(g.beta) : T(0);
  parallel_for(g.m, std::max<int64_t>(1, 4096 / std::max<int64_t>(g.n * g.k, 1)), [&](int64_t r0, int64_t r1) {
    std::vector<T> acc(static_cast<size_t>(g.n));
    for (int64_t i = r0; i < r1; ++i) {
      std::fill(acc.begin(), acc.end(), T(0));
      for (int64_t p = 0; p < g.k; ++p) {
        T av = g.ta ? a[p * g.m + i] : a[i * g.k + p];
        if (g.tb)
          for (int64_t j = 0; j < g.n; ++j) acc[j] += av * b[j * g.k + p];
        else
          for (int64_t j = 0; j < g.n; ++j) acc[j] += av * b[p * g.n + j];
      }
      for (int64_t j = 0; j < g.n; ++j) y[i * g.n + j] = alpha * acc[j] + beta * y[i * g.n + j];
    }
  });
}

using GemmPrimitive = MaybePrimitive<dnnl::matmul>;

// A session step's Gemm with a constant B and C as the bias, prepared once
// (KernelContext::state): primitive, memory objects and B in the primitive's layout.
struct PreparedGemm {
  Shape a_shape, y_shape;
  const Storage* b_storage = nullptr;  // B by identity: a session may have released its bytes
  int64_t b_offset = 0;
  const void* c = nullptr;
  dnnl::primitive prim;
  dnnl::memory src, dst;
  std::unordered_map<int, dnnl::memory> args;
};

void gemm_cpu(KernelContext& ctx);

// A bf16/f16 Gemm computed in f32 and rounded once: where oneDNN has no implementation for the
// type here, and for the empty product (k = 0).
void gemm_through_f32(KernelContext& ctx) {
  KernelContext wide = ctx;
  wide.state = nullptr;
  wide.constant_inputs = 0;  // the f32 copies below are not the session's weights
  Attributes in_f32 = *ctx.attrs;  // an f32 computation: no longer one asked to compute in bf16
  in_f32.set("porta_compute", int64_t{0});
  wide.attrs = &in_f32;
  for (Tensor& t : wide.inputs)
    if (t.defined()) t = t.cast(DType::f32);
  const bool y_f32 = ctx.out(0).dtype() == DType::f32;
  wide.outputs = {y_f32 ? ctx.out(0) : Tensor::empty(ctx.out(0).shape(), DType::f32)};
  gemm_cpu(wide);
  if (!y_f32) ctx.out(0).copy_(wide.out(0).cast(ctx.out(0).dtype()));
}

void gemm_dnnl(KernelContext& ctx, const GemmCall& g) {
  const DType t = ctx.in(0).dtype(), y_type = ctx.out(0).dtype();
  const DType c_type = g.c_as_bias ? ctx.in(2).dtype() : t;
  const bool b_constant = ctx.is_constant_input(1);
  // B as stored, in its own dtype: an f32 constant B of a call computing in bf16 inside
  // (compute_in_bf16) reorders straight into the primitive's bf16 layout.
  auto b_plain = strided_desc({g.k, g.n}, g.tb ? std::vector<int64_t>{1, g.k} : std::vector<int64_t>{g.n, 1},
                              ctx.in(1).dtype());
  auto p = cached<GemmPrimitive>(
      dnn_key("gemm", t, y_type, c_type, Shape{g.m, g.n, g.k}, g.ta, g.tb, g.has_c, g.alpha, g.beta, g.c_as_bias,
              g.c_dims, b_constant), [&] {
        auto r = std::make_shared<GemmPrimitive>();
        try {
          auto a = strided_desc({g.m, g.k}, g.ta ? std::vector<int64_t>{1, g.m} : std::vector<int64_t>{g.k, 1}, t);
          auto b = b_constant ? dnnl::memory::desc(dims_of({g.k, g.n}), dnnl_type(t), dnnl::memory::format_tag::any)
                              : b_plain;
          dnnl::primitive_attr attr;
          if (g.alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(g.alpha)});
          if (g.has_c && !g.c_as_bias) {
            dnnl::post_ops ops;
            ops.append_sum(static_cast<float>(g.beta));
            attr.set_post_ops(ops);
          }
          auto bias = g.c_as_bias ? plain_desc(g.c_dims, c_type) : dnnl::memory::desc();
          dnnl::matmul::desc d(a, b, bias, plain_desc({g.m, g.n}, y_type));
          r->pd = dnnl::matmul::primitive_desc(d, attr, engine());
          r->prim = dnnl::matmul(r->pd);
          r->ok = true;
        } catch (const dnnl::error& e) {
          r->why = e.what();
        }
        return r;
      });
  if (!p->ok && t != DType::f32) return gemm_through_f32(ctx);
  if (!p->ok)
    throw BackendError(str("[Gemm] oneDNN refused an ", g.m, "x", g.n, "x", g.k, " ", dtype_name(t),
                           " matmul: ", p->why));
  if (g.has_c && !g.c_as_bias) fill_with_c(ctx, g);
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), ctx.in(0).raw_data())},
      {DNNL_ARG_WEIGHTS, weights_for(ctx.in(1), wrap_ptr(b_plain, ctx.in(1).raw_data()), p->pd.weights_desc(), b_constant)},
      {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), ctx.out(0).raw_data())}};
  if (g.c_as_bias) args.emplace(DNNL_ARG_BIAS, wrap_ptr(p->pd.bias_desc(), ctx.in(2).raw_data()));
  execute(p->prim, args);
  if (!b_constant || (g.has_c && !g.c_as_bias) || (g.c_as_bias && !ctx.is_constant_input(2))) return;
  auto pg = std::make_shared<PreparedGemm>();
  pg->a_shape = ctx.in(0).shape();
  pg->y_shape = ctx.out(0).shape();
  pg->b_storage = ctx.in(1).storage().get();
  pg->b_offset = ctx.in(1).offset();
  pg->c = g.c_as_bias ? ctx.in(2).raw_data() : nullptr;
  pg->prim = p->prim;
  pg->src = dnnl::memory(p->pd.src_desc(), engine(), ctx.in(0).raw_data());
  pg->dst = dnnl::memory(p->pd.dst_desc(), engine(), ctx.out(0).raw_data());
  pg->args = {{DNNL_ARG_SRC, pg->src}, {DNNL_ARG_WEIGHTS, args.at(DNNL_ARG_WEIGHTS)}, {DNNL_ARG_DST, pg->dst}};
  if (g.c_as_bias) pg->args.emplace(DNNL_ARG_BIAS, dnnl::memory(p->pd.bias_desc(), engine(), ctx.in(2).raw_data()));
  ctx.state = pg;
  ctx.held.clear();
  hold_packed(ctx, 1, args.at(DNNL_ARG_WEIGHTS), b_plain);
}

// Small products (the Linear layers of mlp: 4x64x128, 4x128x128, 4x128x16; cnn's 1x64x10)
// in an own loop: a oneDNN matmul call costs 2-3 us there whatever the size. y row i is C's
// row (bias) plus sum_p a[i, p] * B[p, :], accumulated up to 64 columns at a time in registers.
// B is read as k x n row-major: as given when transB = 0, else a transposed copy (made once
// per session for a constant B, through the weight cache).
constexpr int64_t kSmallGemmMacs = int64_t{1} << 17;

bool small_gemm(const GemmCall& g) {
  if (g.ta || g.alpha != 1.0 || g.m * g.n * g.k > kSmallGemmMacs) return false;
  return !g.has_c || (g.c_as_bias && (g.c_dims[1] == g.n || g.c_dims[1] == 1));
}

// The accumulators are vectors of the clone's width (VB bytes, L floats: vector_width.hpp), kept in
// registers across the k loop.
template <int VB>
inline __attribute__((always_inline)) typename VecOf<float, VB>::type bias_vec(const float* c, int64_t step) {
  constexpr int L = VB / 4;
  typename VecOf<float, VB>::type v{};
  if (!c) return v;
  if (step == 1) std::memcpy(&v, c, VB);
  else
    for (int j = 0; j < L; ++j) v[j] = c[j * step];
  return v;
}

template <int VB>
inline __attribute__((always_inline)) void small_gemm_rows_at(const float* a, const float* b, const float* c,
                                                              int64_t c_row_step, int64_t c_col_step, float* y,
                                                              int64_t m, int64_t n, int64_t k) {
  using V = typename VecOf<float, VB>::type;
  constexpr int L = VB / 4;
  for (int64_t i = 0; i < m; ++i) {
    const float* ai = a + i * k;
    const float* ci = c ? c + i * c_row_step : nullptr;
    float* yi = y + i * n;
    int64_t j0 = 0;
    for (; j0 + 4 * L <= n; j0 += 4 * L) {  // four vectors of columns: four accumulators
      V acc[4], bv;
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) acc[v] = bias_vec<VB>(ci ? ci + (j0 + v * L) * c_col_step : nullptr, c_col_step);
      for (int64_t p = 0; p < k; ++p) {
        const float* bp = b + p * n + j0;
        const float av = ai[p];
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
          std::memcpy(&bv, bp + v * L, VB);
          acc[v] += av * bv;
        }
      }
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) std::memcpy(yi + j0 + v * L, &acc[v], VB);
    }
    for (; j0 + L <= n; j0 += L) {  // one vector of columns: two accumulators over even / odd p
      V even = bias_vec<VB>(ci ? ci + j0 * c_col_step : nullptr, c_col_step), odd = {}, be, bo;
      int64_t p = 0;
      for (; p + 1 < k; p += 2) {
        std::memcpy(&be, b + p * n + j0, VB);
        std::memcpy(&bo, b + (p + 1) * n + j0, VB);
        even += ai[p] * be;
        odd += ai[p + 1] * bo;
      }
      if (p < k) {
        std::memcpy(&be, b + p * n + j0, VB);
        even += ai[p] * be;
      }
      even += odd;
      std::memcpy(yi + j0, &even, VB);
    }
    for (; j0 < n; ++j0) {  // the last columns one by one
      float acc = ci ? ci[j0 * c_col_step] : 0.0f;
      for (int64_t p = 0; p < k; ++p) acc += ai[p] * b[p * n + j0];
      yi[j0] = acc;
    }
  }
}

PORTA_CPU_CLONES
void small_gemm_rows(const float* a, const float* b, const float* c, int64_t c_row_step, int64_t c_col_step,
                     float* y, int64_t m, int64_t n, int64_t k) {
  switch (vector_bytes()) {
    case 64: return small_gemm_rows_at<64>(a, b, c, c_row_step, c_col_step, y, m, n, k);
    case 32: return small_gemm_rows_at<32>(a, b, c, c_row_step, c_col_step, y, m, n, k);
    default: return small_gemm_rows_at<16>(a, b, c, c_row_step, c_col_step, y, m, n, k);
  }
}

void gemm_small(KernelContext& ctx, const GemmCall& g) {
  const Tensor& b = ctx.in(1);
  const float* bk = b.data<float>();
  dnnl::memory transposed;
  if (g.tb) {  // B is n x k: a k x n copy
    auto have = wrap_ptr(strided_desc({g.k, g.n}, {1, g.k}, DType::f32), b.raw_data());
    transposed = weights_for(b, have, plain_desc({g.k, g.n}, DType::f32), ctx.is_constant_input(1));
    bk = static_cast<const float*>(transposed.get_data_handle());
  }
  const float* c = g.has_c ? ctx.in(2).data<float>() : nullptr;
  int64_t c_row_step = g.has_c && g.c_dims[0] != 1 ? g.c_dims[1] : 0;
  int64_t c_col_step = g.has_c && g.c_dims[1] != 1 ? 1 : 0;
  small_gemm_rows(ctx.in(0).data<float>(), bk, c, c_row_step, c_col_step, ctx.out(0).data<float>(), g.m, g.n, g.k);
}

void gemm_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f32 && compute_format(ctx) == DType::bf16) return compute_in_bf16(ctx, gemm_cpu);
  if (auto* pg = static_cast<PreparedGemm*>(ctx.state.get());
      pg && ctx.in(0).shape() == pg->a_shape && ctx.out(0).shape() == pg->y_shape &&
      ctx.in(1).storage().get() == pg->b_storage && ctx.in(1).offset() == pg->b_offset &&
      (ctx.has_input(2) ? ctx.in(2).raw_data() : nullptr) == pg->c) {
    pg->src.set_data_handle(ctx.in(0).raw_data());
    pg->dst.set_data_handle(ctx.out(0).raw_data());
    return execute(pg->prim, pg->args);
  }
  GemmCall g = gemm_call(ctx);
  if (ctx.out(0).numel() == 0) return;
  if (ctx.out(0).dtype() == DType::f64) return gemm_loop<double>(ctx, g);
  if (ctx.in(0).dtype() != DType::f32) return g.k == 0 ? gemm_through_f32(ctx) : gemm_dnnl(ctx, g);
  if (g.k == 0) {  // alpha * (empty sum) + beta * C
    fill_with_c(ctx, g);
    if (g.has_c) {
      float* y = ctx.out(0).data<float>();
      for (int64_t i = 0; i < ctx.out(0).numel(); ++i) y[i] *= static_cast<float>(g.beta);
    }
    return;
  }
  if (small_gemm(g)) return gemm_small(ctx, g);
  gemm_dnnl(ctx, g);
}

// Few rows of A against a large B (a classifier at batch 1): gemv.hpp's loop streams B as the
// model stores it, with no packed copy of the weights.
std::string gemm_gemv_supports(const KernelContext& ctx) {
  if (compute_format(ctx) != DType::f32) return "computes in bf16 inside: the onednn implementation converts";
  const bool ta = ctx.attrs->get_int("transA") != 0, tb = ctx.attrs->get_int("transB") != 0;
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  return gemv_declines(ta ? a.dim(1) : a.dim(0), tb ? b.dim(0) : b.dim(1), ta ? a.dim(0) : a.dim(1), tb);
}

void gemm_gemv(KernelContext& ctx) {
  const GemmCall g = gemm_call(ctx);
  if (ctx.out(0).numel() == 0) return;
  GemvProblem p;
  std::vector<float> a_rows;  // A when transA: m x k from the stored k x m
  p.a = ctx.in(0).data<float>();
  if (g.ta) {
    a_rows.resize(static_cast<size_t>(g.m * g.k));
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t q = 0; q < g.k; ++q) a_rows[static_cast<size_t>(i * g.k + q)] = p.a[q * g.m + i];
    p.a = a_rows.data();
  }
  p.m = g.m;
  p.k = g.k;
  p.b = ctx.in(1).data<float>();
  p.n = g.n;
  p.b_nk = g.tb;
  if (g.has_c) {  // C broadcasts to m x n (Gemm's shape check): a scalar, a row, or a matrix
    const Shape& c = ctx.in(2).shape();
    const int64_t rows = c.size() == 2 ? c[0] : 1, cols = c.empty() ? 1 : c.back();
    p.c = ctx.in(2).data<float>();
    p.c_row_step = rows == 1 ? 0 : cols;
    p.c_col_step = cols == 1 ? 0 : 1;
  }
  p.alpha = static_cast<float>(g.alpha);
  p.beta = static_cast<float>(g.beta);
  p.y = ctx.out(0).data<float>();
  gemv(p);
}

// More rows (a Linear layer over a few tokens) against a constant B: B packed once per session
// into panels (panels.hpp), streamed once per call, C added as a row bias and the fused
// activation applied to each panel's sums in cache.
std::string gemm_panels_supports(const KernelContext& ctx) {
  const bool bf16 = compute_format(ctx) == DType::bf16;
  if (!ctx.is_constant_input(1)) return "B is not a session constant (its panels are packed once per session)";
  const Attributes& at = *ctx.attrs;
  if (at.get_int("transA") != 0) return "transA: the panels read rows of A";
  if (at.get_float("alpha") != 1.0) return "alpha is not 1";
  const bool tb = at.get_int("transB") != 0;
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  const int64_t m = a.dim(0), k = a.dim(1), n = tb ? b.dim(0) : b.dim(1);
  if (ctx.has_input(2) && at.get_float("beta") != 0.0) {
    const Shape& c = ctx.in(2).shape();
    const bool row = (c.size() == 1 && c[0] == n) || (c.size() == 2 && c[0] == 1 && c[1] == n);
    if (!row || at.get_float("beta") != 1.0 || ctx.in(2).dtype() != DType::f32)
      return "C is not a bias row of N f32 values added with beta 1";
  }
  return bf16 ? panel_product_bf16_declines(m, k, n) : panel_product_declines(m, k, n, tb);
}

void gemm_panels(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const bool tb = ctx.attrs->get_int("transB") != 0;
  const int64_t m = a.dim(0), k = a.dim(1), n = y.dim(1);
  const float* bias = ctx.has_input(2) && ctx.attrs->get_float("beta") != 0.0 ? ctx.in(2).data<float>() : nullptr;
  if (compute_format(ctx) == DType::bf16) {  // the bf16 panels (panels.hpp), on AVX-512 BF16
    const PanelProductBf16Step& step = panel_product_bf16_step(ctx, tb, "Gemm");
    dense_panel_product_bf16(a.data<float>(), m, k, step, n, bias, y.data<float>());
    return;
  }
  const PanelProductStep& step = panel_product_step(ctx, tb, "Gemm");
  dense_panel_product(a.data<float>(), m, k, step, n, bias, y.data<float>());
}

}  // namespace

// Every implementation applies the cpu's fused activations over Y after computing it (in
// cache: a Gemm's Y is a few rows), after a fused residual (porta_residual: adding_residual).
// The onednn one also writes f32 from bf16/f16 inputs (KernelDef::f32_output).
namespace {
template <void (*Fn)(KernelContext&)>
void then_activate(KernelContext& ctx) {
  Fn(ctx);
  activate_tensor(ctx.out(0), opdef::parse_fused_activation(*ctx.attrs, "Gemm"));
}

std::vector<std::string> gemm_fused() {
  std::vector<std::string> names = cpu_fused_activations();
  names.push_back("porta_residual");
  return names;
}

const bool gemm_gemv_registered = register_kernel_at_load(
    f32_product_loop("Gemm", {"gemv", 1}, adding_residual(then_activate<gemm_gemv>), gemm_gemv_supports, gemm_fused()));
// The panels apply the fused activation to each panel's sums themselves.
const bool gemm_panels_registered = register_kernel_at_load(
    f32_product_loop("Gemm", {"panels", 2}, adding_residual(gemm_panels), gemm_panels_supports, gemm_fused()));
const bool gemm_onednn_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "Gemm";
  k.backend = DeviceType::cpu;
  k.impl = {"onednn", 0};
  k.dtypes = kF32 | kF64 | kBF16 | kF16;
  k.computes_in = kBF16;  // f32 calls in bf16 inside (compute_in_bf16)
  k.fn = adding_residual(then_activate<gemm_cpu>);
  k.f32_output = true;
  k.fused_activations = gemm_fused();
  return k;
}());
}  // namespace

}  // namespace porta::cpu
