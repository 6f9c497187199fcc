// MatMul on cpu: oneDNN's matmul primitive for f32/bf16/f16 (batch broadcasting handled by
// oneDNN through size-1 batch dims), a blocked loop for f64. When oneDNN has no
// implementation for a half type on this machine, the call runs in f32 and rounds once.
// bf16/f16 inputs may come with an f32 output (KernelDef::f32_output): oneDNN's f32
// accumulators are then written as they are. A fused bias (the porta-internal input
// `porta_bias`, f32 or A's dtype) is the primitive's bias, added to the f32 accumulators; a
// fused activation (porta_activation) is its post-ops, or porta's loop over the f32 result
// (kernels/cpu/fused_activation.hpp).
#include <algorithm>
#include <cstring>
#include <optional>

#include "kernels/cpu/custom_vmath.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/fused_activation.hpp"
#include "kernels/cpu/gemv.hpp"
#include "kernels/cpu/matmul_loop.hpp"
#include "kernels/cpu/panels.hpp"
#include "kernels/cpu/vector_width.hpp"

namespace porta::cpu {
namespace {

// Operand shapes promoted to matrices and padded with leading 1s to the output's rank.
struct MatMulGeometry {
  Shape a, b, out;
  int64_t m = 0, n = 0, k = 0;
};

MatMulGeometry geometry(const Shape& a0, const Shape& b0) {
  MatMulGeometry g;
  g.a = a0;
  g.b = b0;
  if (g.a.size() == 1) g.a.insert(g.a.begin(), 1);
  if (g.b.size() == 1) g.b.push_back(1);
  size_t rank = std::max(g.a.size(), g.b.size());
  g.a.insert(g.a.begin(), rank - g.a.size(), 1);
  g.b.insert(g.b.begin(), rank - g.b.size(), 1);
  g.out.resize(rank);
  for (size_t i = 0; i + 2 < rank; ++i) g.out[i] = std::max(g.a[i], g.b[i]);
  for (size_t i = 0; i + 2 < rank; ++i)
    if (g.a[i] == 0 || g.b[i] == 0) g.out[i] = 0;
  g.m = g.a[rank - 2];
  g.k = g.a[rank - 1];
  g.n = g.b[rank - 1];
  g.out[rank - 2] = g.m;
  g.out[rank - 1] = g.n;
  return g;
}

using MatMulPrimitive = MaybePrimitive<dnnl::matmul>;

// The bias as the primitive reads it: one row broadcast over the output's other axes.
dnnl::memory::desc bias_desc(const MatMulGeometry& g, DType t) {
  Shape dims(g.out.size(), 1);
  dims.back() = g.n;
  return plain_desc(dims, t);
}

// `packed_b`: B is a session constant, so the primitive may ask for it in its own layout
// (reordered once, weights_for) instead of repacking the plain matrix on every call.
// `t`: the type of A and B; `y_type`: Y's (t, or f32 from half inputs); `bias_type`: the
// fused bias's (undef for none).
std::shared_ptr<MatMulPrimitive> matmul_primitive(const MatMulGeometry& g, DType t, DType y_type, bool packed_b,
                                                  std::optional<DType> bias_type, const Attributes& attrs) {
  return cached<MatMulPrimitive>(dnn_key("matmul", t, y_type, g.a, g.b, g.out, packed_b,
                                         bias_type ? static_cast<int>(*bias_type) : -1, fused_activation_key(attrs)),
                                 [&] {
    auto p = std::make_shared<MatMulPrimitive>();
    try {
      auto bd = packed_b ? dnnl::memory::desc(dims_of(g.b), dnnl_type(t), dnnl::memory::format_tag::any)
                         : plain_desc(g.b, t);
      dnnl::matmul::desc d = bias_type ? dnnl::matmul::desc(plain_desc(g.a, t), bd, bias_desc(g, *bias_type),
                                                            plain_desc(g.out, y_type))
                                       : dnnl::matmul::desc(plain_desc(g.a, t), bd, plain_desc(g.out, y_type));
      dnnl::primitive_attr pa;
      pa.set_post_ops(fused_post_ops(attrs));
      p->pd = dnnl::matmul::primitive_desc(d, pa, engine());
      p->prim = dnnl::matmul(p->pd);
      p->ok = true;
    } catch (const dnnl::error& e) {
      p->why = e.what();
    }
    return p;
  });
}

// A session step's MatMul with a constant B, prepared once (KernelContext::state): the
// primitive, its memory objects and B in the primitive's layout; a call rebinds A and Y.
struct PreparedMatMul {
  Shape a_shape, y_shape;
  const Storage* b_storage = nullptr;  // B by identity: a session may have released its bytes
  int64_t b_offset = 0;
  const void* bias = nullptr;  // a fused bias: a session constant, bound once
  dnnl::primitive prim;
  dnnl::memory src, dst;
  std::unordered_map<int, dnnl::memory> args;
  opdef::FusedActivation after;  // the fused activation porta applies after the primitive
  Tensor y32;                    // its f32 scratch, when Y is a half type
};

// Runs the primitive with `args` (DST bound to y, or to y32 when an activation follows a half
// Y), then that activation.
void execute_then_activate(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory>& args,
                           const opdef::FusedActivation& after, Tensor& y, const Tensor& y32) {
  execute(prim, args);
  if (!after.active()) return;
  if (!y32.defined()) return activate_tensor(y, after);
  Tensor scratch = y32;
  activate_tensor(scratch, after);
  const float* src = y32.data<float>();
  if (y.dtype() == DType::bf16) vmath::f32_to_bf16_n(src, static_cast<uint16_t*>(y.raw_data()), y.numel());
  else vmath::f32_to_f16_n(src, static_cast<uint16_t*>(y.raw_data()), y.numel());
}

void matmul_dnnl(const Tensor& a, const Tensor& b, Tensor& y, const MatMulGeometry& g, const Attributes& attrs,
                 bool b_constant = false, KernelContext* prepared = nullptr, const Tensor* bias = nullptr) {
  const DType t = a.dtype();
  // B in another dtype than A (an f32 weight of a call computing in bf16 inside): a constant
  // prepared once is reordered straight into the primitive's bf16 layout; any other is
  // converted first.
  if (b.dtype() != t && !(prepared && b_constant)) {
    const Tensor converted = b.cast(t);
    return matmul_dnnl(a, converted, y, g, attrs, false, prepared, bias);
  }
  const std::optional<DType> bias_type = bias ? std::optional<DType>(bias->dtype()) : std::nullopt;
  const opdef::FusedActivation after = activation_after_primitive(attrs);
  // An activation after the primitive on a half Y: the primitive writes f32 scratch first.
  const bool via_f32 = after.active() && y.dtype() != DType::f32 && y.dtype() != DType::f64;
  auto p = matmul_primitive(g, t, via_f32 ? DType::f32 : y.dtype(), b_constant, bias_type, attrs);
  if (!p->ok) {
    if (t == DType::f32)
      throw BackendError(str("[MatMul] oneDNN refused a ", shape_str(g.a), " x ", shape_str(g.b),
                             " f32 matmul: ", p->why));
    // No native half implementation here: compute in f32, round once at the end (if Y is
    // not f32 itself).
    Tensor y32 = y.dtype() == DType::f32 ? y : Tensor::empty(y.shape(), DType::f32);
    Tensor bias32 = bias ? bias->cast(DType::f32) : Tensor();
    matmul_dnnl(a.cast(DType::f32), b.cast(DType::f32), y32, g, attrs, false, nullptr, bias ? &bias32 : nullptr);
    if (y.dtype() != DType::f32) y.copy_(y32.cast(y.dtype()));
    return;
  }
  dnnl::memory wts = b_constant ? weights_for(b, wrap_ptr(plain_desc(g.b, b.dtype()), b.raw_data()),
                                              p->pd.weights_desc(), true)
                                : wrap_ptr(p->pd.weights_desc(), b.raw_data());
  Tensor y32 = via_f32 ? Tensor::empty(y.shape(), DType::f32) : Tensor();
  void* dst = via_f32 ? y32.raw_data() : y.raw_data();
  if (!prepared || !b_constant) {
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), a.raw_data())},
                                               {DNNL_ARG_WEIGHTS, wts},
                                               {DNNL_ARG_DST, wrap_ptr(p->pd.dst_desc(), dst)}};
    if (bias) args.emplace(DNNL_ARG_BIAS, wrap_ptr(p->pd.bias_desc(), bias->raw_data()));
    return execute_then_activate(p->prim, args, after, y, y32);
  }
  auto pm = std::make_shared<PreparedMatMul>();
  pm->a_shape = a.shape();
  pm->y_shape = y.shape();
  pm->b_storage = b.storage().get();
  pm->b_offset = b.offset();
  pm->prim = p->prim;
  pm->src = dnnl::memory(p->pd.src_desc(), engine(), a.raw_data());
  pm->dst = dnnl::memory(p->pd.dst_desc(), engine(), dst);
  pm->after = after;
  pm->y32 = y32;
  pm->args = {{DNNL_ARG_SRC, pm->src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, pm->dst}};
  if (bias) {
    pm->bias = bias->raw_data();
    pm->args.emplace(DNNL_ARG_BIAS, dnnl::memory(p->pd.bias_desc(), engine(), const_cast<void*>(bias->raw_data())));
  }
  execute_then_activate(pm->prim, pm->args, after, y, y32);
  prepared->state = pm;
  prepared->held.clear();
  hold_packed(*prepared, 1, wts, plain_desc(g.b, b.dtype()));
}

// y += bias along y's last axis (the loops that have no bias of their own).
void add_bias_rows(Tensor& y, const Tensor& bias) {
  const int64_t n = y.rank() == 0 ? 1 : y.shape().back();
  if (y.numel() == 0 || n == 0) return;
  const Tensor row = bias.cast(y.dtype());
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* py = y.data<T>();
      const T* pb = row.data<T>();
      for (int64_t i = 0; i < y.numel(); ++i) py[i] += pb[i % n];
    } else {
      throw Unsupported(str("[MatMul] a fused bias over a ", dtype_name(y.dtype()), " loop result"));
    }
  });
}

void matmul_cpu(KernelContext& ctx) {
  if (ctx.in(0).dtype() == DType::f32 && compute_format(ctx) == DType::bf16) return compute_in_bf16(ctx, matmul_cpu);
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  const Tensor* bias = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  Tensor& y = ctx.out(0);
  if (auto* pm = static_cast<PreparedMatMul*>(ctx.state.get());
      pm && a.shape() == pm->a_shape && y.shape() == pm->y_shape && b.storage().get() == pm->b_storage &&
      b.offset() == pm->b_offset &&
      (bias ? bias->raw_data() : nullptr) == pm->bias) {
    pm->src.set_data_handle(const_cast<void*>(a.raw_data()));
    if (!pm->y32.defined()) pm->dst.set_data_handle(y.raw_data());
    return execute_then_activate(pm->prim, pm->args, pm->after, y, pm->y32);
  }
  MatMulGeometry g = geometry(a.shape(), b.shape());
  if (y.numel() == 0) return;
  const Attributes& attrs = *ctx.attrs;
  const opdef::FusedActivation act = opdef::parse_fused_activation(attrs, "MatMul");  // for the loops
  if (g.k == 0) {  // empty reduction: every element is the sum of nothing (plus the bias)
    std::memset(y.raw_data(), 0, y.nbytes());
    if (bias) add_bias_rows(y, *bias);
    return activate_tensor(y, act);
  }
  // oneDNN matmul takes at most 12 dims; f64 is not a oneDNN type.
  if (y.dtype() == DType::f64 || g.out.size() > 12) {
    if (a.dtype() != y.dtype()) {  // half inputs, f32 output: the f32 loop on widened inputs
      Tensor a32 = a.cast(DType::f32), b32 = b.cast(DType::f32);
      batched_matmul_loop<float>(a32.data<float>(), b32.data<float>(), y.data<float>(), g.a, g.b, g.out);
      if (bias) add_bias_rows(y, *bias);
      return activate_tensor(y, act);
    }
    visit_dtype(y.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        batched_matmul_loop<T>(a.data<T>(), b.data<T>(), y.data<T>(), g.a, g.b, g.out);
      else
        throw Unsupported(str("[MatMul] rank ", g.out.size(), " ", dtype_name(y.dtype()),
                              " matmul: oneDNN allows 12 dims at most"));
    });
    if (bias) add_bias_rows(y, *bias);
    return activate_tensor(y, act);
  }
  // A batch of rows times one matrix (b's batch dims all 1, as in a Linear layer on a
  // [batch, seq, features] input): one [batch*m, k] x [k, n] product. oneDNN's broadcasting
  // batched matmul runs such shapes far slower than the folded 2-d one.
  bool b_single = std::all_of(g.b.begin(), g.b.end() - 2, [](int64_t d) { return d == 1; });
  if (b_single && g.out.size() > 2) {
    MatMulGeometry folded;
    folded.m = shape_numel(g.out) / g.n;
    folded.k = g.k;
    folded.n = g.n;
    folded.a = {folded.m, g.k};
    folded.b = {g.k, g.n};
    folded.out = {folded.m, g.n};
    return matmul_dnnl(a, b, y, folded, attrs, ctx.is_constant_input(1), &ctx, bias);
  }
  // A constant 2-d B (a Linear layer's weight) is packed once for the session.
  bool b_constant = ctx.is_constant_input(1) && g.out.size() == 2;
  matmul_dnnl(a, b, y, g, attrs, b_constant, &ctx, bias);
}

// A few rows (all batches together) against one large B: gemv.hpp's loop streams B as stored,
// with no packed copy of the weights.
std::string matmul_gemv_supports(const KernelContext& ctx) {
  if (compute_format(ctx) != DType::f32) return "computes in bf16 inside: the onednn implementation converts";
  const MatMulGeometry g = geometry(ctx.in(0).shape(), ctx.in(1).shape());
  if (!std::all_of(g.b.begin(), g.b.end() - 2, [](int64_t d) { return d == 1; }))
    return str("B is a batch of ", shape_str(g.b), " matrices: the loop takes one B");
  const int64_t rows = g.n == 0 ? 0 : shape_numel(g.out) / g.n;
  return gemv_declines(rows, g.n, g.k, false);
}

void matmul_gemv(KernelContext& ctx) {
  const MatMulGeometry g = geometry(ctx.in(0).shape(), ctx.in(1).shape());
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  GemvProblem p;
  p.a = ctx.in(0).data<float>();  // B is one matrix, so A's batches are rows of one product
  p.m = y.numel() / g.n;
  p.k = g.k;
  p.b = ctx.in(1).data<float>();
  p.n = g.n;
  if (ctx.has_input(2)) {  // the fused bias: C as one row
    p.c = ctx.in(2).data<float>();
    p.c_col_step = 1;
  }
  p.y = y.data<float>();
  gemv(p);
  activate_tensor(y, opdef::parse_fused_activation(*ctx.attrs, "MatMul"));
}

// More rows against one constant B (a Linear layer's weight over a few tokens: a ViT's 17, a
// ConvNeXt stage's 16 pixels): B packed once per session into panels (panels.hpp), streamed
// once per call, where oneDNN's matmul without AVX-512 (gemm:jit) repacks B on every call.
// A call computing in bf16 inside runs the bf16 panels (panels.hpp) on AVX-512 BF16.
std::string matmul_panels_supports(const KernelContext& ctx) {
  const bool bf16 = compute_format(ctx) == DType::bf16;
  if (!ctx.is_constant_input(1)) return "B is not a session constant (its panels are packed once per session)";
  if (ctx.in(1).rank() != 2) return str("B of rank ", ctx.in(1).rank(), ": the panels take one 2-d B");
  const MatMulGeometry g = geometry(ctx.in(0).shape(), ctx.in(1).shape());
  const int64_t rows = g.n == 0 ? 0 : shape_numel(g.out) / g.n;
  return bf16 ? panel_product_bf16_declines(rows, g.k, g.n) : panel_product_declines(rows, g.k, g.n, false);
}

void matmul_panels(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const int64_t k = ctx.in(1).dim(0), n = ctx.in(1).dim(1), rows = y.numel() / n;
  if (compute_format(ctx) == DType::bf16) {
    const PanelProductBf16Step& step = panel_product_bf16_step(ctx, false, "MatMul");
    dense_panel_product_bf16(a.data<float>(), rows, k, step, n,
                             ctx.has_input(2) ? ctx.in(2).data<float>() : nullptr, y.data<float>());
    return;
  }
  const PanelProductStep& step = panel_product_step(ctx, false, "MatMul");
  dense_panel_product(a.data<float>(), rows, k, step, n, ctx.has_input(2) ? ctx.in(2).data<float>() : nullptr,
                      y.data<float>());
}

}  // namespace

// Every implementation adds a fused bias (porta_bias) and a fused residual (porta_residual,
// after the product: adding_residual) and applies the cpu's fused activations. The onednn one
// also writes f32 from bf16/f16 inputs (KernelDef::f32_output).
namespace {
std::vector<std::string> matmul_fused() {
  std::vector<std::string> names = cpu_fused_activations();
  names.push_back("porta_bias");
  names.push_back("porta_residual");
  return names;
}

const bool matmul_gemv_registered = register_kernel_at_load(
    f32_product_loop("MatMul", {"gemv", 1}, adding_residual(matmul_gemv), matmul_gemv_supports, matmul_fused()));
const bool matmul_panels_registered = register_kernel_at_load(
    f32_product_loop("MatMul", {"panels", 2}, adding_residual(matmul_panels), matmul_panels_supports, matmul_fused()));
const bool matmul_onednn_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "MatMul";
  k.backend = DeviceType::cpu;
  k.impl = {"onednn", 0};
  k.dtypes = kF32 | kF64 | kF16 | kBF16;
  k.computes_in = kBF16;  // f32 calls in bf16 inside (compute_in_bf16)
  k.fn = adding_residual(matmul_cpu);
  k.f32_output = true;
  k.fused_activations = matmul_fused();
  return k;
}());
}  // namespace

}  // namespace porta::cpu
