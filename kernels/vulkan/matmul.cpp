// MatMul and Gemm on vulkan: matmul.comp (tiled, fp32 accumulation). MatMul broadcasts batch
// axes through a per-batch offset table; 1-D operands follow numpy (prepend/append a unit
// axis, removed from the result by the inferred output shape). Where the driver caps the loop
// iterations of an invocation (lavapipe), a long inner dimension is summed over several
// dispatches through an fp32 scratch of Y's size (matmul_loops). An operand larger than one
// binding (maxStorageBufferRange: torch Linear weights of vgg/alexnet on lavapipe) is bound in
// aligned windows: B (N,K) by column blocks of Y, A (M,K) by row blocks, A (K,M) and B (K,N) by
// K windows summed through the same scratch (plan_gemm). Y, C and the scratch are bound whole.
#include <algorithm>
#include <tuple>
#include <numeric>

#include "kernels/vulkan/texel_gemm.hpp"
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

constexpr int64_t kTileK = 16;  // TK of matmul.comp

// Upper bound of the loop iterations one invocation of matmul.comp runs in a dispatch over
// `tiles` K tiles of 16 (vk_kernel.hpp's count: a loop costs its iterations + 1, a barrier 1;
// the constant 4-trip loops are counted too, though the compiler usually unrolls them):
//   once:       accumulator init 5 + 4*5, output 5 + 4*5, the K loop's exit 1          =  51
//   per K tile: its back-edge 1, staging loop 4 + 1, 2 barriers, the kk loop 16 + 1 with,
//               per kk, the av and bv loops 2*5 and the 4x4 product 5 + 4*5            = 585
// On lavapipe (65535, less the 1/8 margin: 57344) that is 97 tiles, K = 1552 per dispatch.
// Measured there, an unsplit dispatch spends about 6 per tile (the constant loops unrolled), so
// this is ~100x safe: it costs only extra dispatches on a software device, and stays right on
// a compiler that does not unroll.
uint64_t matmul_loops(int64_t tiles) { return 51 + 585 * static_cast<uint64_t>(tiles); }

// K tiles one dispatch may run within the driver's loop cap (INT64_MAX: no cap; 0: not one).
int64_t tiles_per_dispatch(const KernelContext& ctx) {
  uint64_t limit = loop_limit(ctx);
  if (limit == UINT64_MAX) return INT64_MAX;
  if (limit < matmul_loops(1)) return 0;
  return static_cast<int64_t>((limit - matmul_loops(0)) / (matmul_loops(1) - matmul_loops(0)));
}

struct Gemm {
  int64_t M, N, K;
  int64_t sam, sak, sbk, sbn, scm = 0, scn = 0;
  bool ta = false, tb = false;  // A stored (K, M), B stored (N, K)
  double alpha = 1, beta = 0;
  std::vector<int32_t> offsets;  // (a_off, b_off) per batch
};

// What one product needs to know about its operands to be planned (supports and run agree).
struct Dims {
  int64_t M, N, K, batches;
  bool ta, tb;
  size_t elem;                          // bytes per element of A, B, C and Y
  int64_t a_numel, b_numel, c_numel;  // c_numel 0: no C
};

// How the product is cut: Y in blocks of mb rows x nb columns, K in windows of kw (each the full
// extent when not split), K windows further in dispatches of `per` tiles under the loop cap.
// window_a/window_b: the operand is larger than one binding and is bound a window at a time
// (A (M,K): rows of its M block; A (K,M): rows of the K window; B (N,K): rows of the N block;
// B (K,N): rows of the K window). Window starts are multiples of the binding alignment.
struct Plan {
  int64_t mb = 0, nb = 0, kw = 0, per = 0;
  bool window_a = false, window_b = false, partial = false;
  std::string why;  // non-empty: decline
};

// Rows of `row_bytes` per window: at most `cap`, a multiple of `unit` (so that every window
// starts at an aligned byte offset), preferably of `prefer` too; 0 when not one unit fits.
int64_t window_rows(int64_t cap, int64_t unit, int64_t prefer) {
  int64_t both = std::lcm(unit, prefer);
  if (cap >= both) return cap / both * both;
  return cap / unit * unit;
}

Plan plan_gemm(const KernelContext& ctx, const Dims& d) {
  Plan p;
  const DeviceCaps& caps = device_caps(ctx);
  const uint64_t limit = binding_limit(ctx);
  const int64_t align = static_cast<int64_t>(caps.storage_alignment);
  const int64_t y_numel = d.batches * d.M * d.N;
  auto too_big = [&](const char* what, uint64_t bytes, const std::string& tail) {
    return str(what, " has ", bytes, " bytes, more than the device's maxStorageBufferRange (", limit, ")", tail);
  };
  using Named = std::pair<const char*, int64_t>;
  for (auto [what, n] : std::initializer_list<Named>{{"A", d.a_numel}, {"B", d.b_numel}, {"C", d.c_numel}, {"Y", y_numel}})
    if (n >= (int64_t{1} << 31)) return p.why = str(what, " has more than 2^31 elements"), p;
  if (static_cast<uint64_t>(y_numel) * d.elem > limit)
    return p.why = too_big("the output Y", y_numel * d.elem, " (Y is bound whole)"), p;
  if (static_cast<uint64_t>(d.c_numel) * d.elem > limit)
    return p.why = too_big("C", d.c_numel * d.elem, " (C is bound whole)"), p;
  uint64_t a_bytes = static_cast<uint64_t>(d.a_numel) * d.elem, b_bytes = static_cast<uint64_t>(d.b_numel) * d.elem;
  p.window_a = a_bytes > limit;
  p.window_b = b_bytes > limit;
  if ((p.window_a || p.window_b) && d.batches > 1)
    return p.why = too_big(p.window_a ? "A" : "B", p.window_a ? a_bytes : b_bytes,
                           str("; batched MatMul (", d.batches, " products) binds its operands whole")),
           p;
  if (d.batches > static_cast<int64_t>(caps.max_groups[2]))
    return p.why = str(d.batches, " batches exceed the device's workgroup count"), p;
  p.mb = d.M, p.nb = d.N, p.kw = d.K;
  int64_t unit_m = 1, unit_n = 1, unit_k = 1, cap_k = d.K;
  // A row of `row` elements: the alignment unit of row counts and how many rows fit.
  auto rows = [&](int64_t row, int64_t& unit, int64_t& cap, const char* what) -> std::string {
    int64_t row_bytes = row * static_cast<int64_t>(d.elem);
    unit = std::lcm(unit, align / std::gcd(align, row_bytes));
    cap = std::min(cap, static_cast<int64_t>(limit / static_cast<uint64_t>(row_bytes)));
    if (cap < unit)
      return str(what, " has ", what[0] == 'A' ? a_bytes : b_bytes, " bytes, more than the device's ",
                 "maxStorageBufferRange (", limit, "), and not one aligned window of ", unit, " rows of ", row_bytes,
                 " bytes fits");
    return "";
  };
  if (p.window_a && !d.ta) {
    if (auto why = rows(d.K, unit_m, p.mb, "A (M x K)"); !why.empty()) return p.why = why, p;
    p.mb = window_rows(p.mb, unit_m, 64);
  }
  if (p.window_b && d.tb) {
    if (auto why = rows(d.K, unit_n, p.nb, "B (N x K)"); !why.empty()) return p.why = why, p;
    p.nb = window_rows(p.nb, unit_n, 64);
  }
  if (p.window_a && d.ta)
    if (auto why = rows(d.M, unit_k, cap_k, "A (K x M)"); !why.empty()) return p.why = why, p;
  if (p.window_b && !d.tb)
    if (auto why = rows(d.N, unit_k, cap_k, "B (K x N)"); !why.empty()) return p.why = why, p;
  if (cap_k < d.K) p.kw = window_rows(cap_k, unit_k, kTileK);
  // A single product larger than the grid is cut into blocks too (batches are not).
  int64_t max_m = static_cast<int64_t>(caps.max_groups[1]) * 64, max_n = static_cast<int64_t>(caps.max_groups[0]) * 64;
  if (d.batches == 1) {
    if (p.mb > max_m) p.mb = max_m / unit_m * unit_m;
    if (p.nb > max_n) p.nb = max_n / unit_n * unit_n;
  } else if (p.mb > max_m || p.nb > max_n) {
    return p.why = "grid beyond the device's workgroup count", p;
  }
  p.per = tiles_per_dispatch(ctx);
  if (p.per < 1) return p.why = loop_budget_ok(ctx, matmul_loops(1), "one 16-deep K tile of the tiled GEMM"), p;
  p.partial = p.kw < d.K || (d.K + kTileK - 1) / kTileK > p.per;
  if (p.partial && static_cast<uint64_t>(y_numel) * 4 > limit)
    return p.why = str("K = ", d.K, " is summed over several dispatches (", p.kw < d.K ? "K windows of a large operand" : "loop cap",
                       ") through an fp32 scratch of ", y_numel * 4,
                       " bytes, more than the device's maxStorageBufferRange (", limit, ")"),
           p;
  return p;
}

// A tensor bound in windows must start at an aligned offset itself (else launch() would copy
// all of it for every window): such a view is copied once here.
Tensor aligned(const KernelContext& ctx, const Tensor& t) {
  auto* rec = static_cast<Buffer*>(t.storage()->handle());
  uint64_t start = rec->offset + static_cast<uint64_t>(t.offset()) * dtype_size(t.dtype());
  return start % device_caps(ctx).storage_alignment ? t.clone() : t;
}

void run_gemm(KernelContext& ctx, const Gemm& g, const Tensor& a_in, const Tensor& b_in, const Tensor* c,
              Tensor& y) {
  int64_t batches = static_cast<int64_t>(g.offsets.size() / 2);
  if (y.numel() == 0) return;
  Dims dims{g.M, g.N, g.K, batches, g.ta, g.tb, dtype_size(y.dtype()), a_in.numel(), b_in.numel(),
            c ? c->numel() : 0};
  Plan plan = plan_gemm(ctx, dims);
  const Epilogue epi = epilogue_of(ctx);  // a fused residual and activation
  if (!plan.why.empty()) throw BackendError(str("[", ctx.op->name, "] ", plan.why, " (supports should decline)"));
  Tensor a = plan.window_a ? aligned(ctx, a_in) : a_in, b = plan.window_b ? aligned(ctx, b_in) : b_in;
  const size_t elem = dims.elem;
  Tensor table = Tensor::from_host(g.offsets.data(), {static_cast<int64_t>(g.offsets.size())}, DType::i32,
                                   ctx.device);
  Tensor partial = plan.partial ? Tensor::empty({batches * g.M * g.N}, DType::f32, ctx.device) : table;
  // Dispatches of at most `per` K tiles (one when the cap allows all of K).
  const int64_t step = plan.per >= (g.K + kTileK - 1) / kTileK ? std::max<int64_t>(g.K, 1) : plan.per * kTileK;
  for (int64_t m0 = 0; m0 < g.M; m0 += plan.mb) {
    int64_t m1 = std::min(g.M, m0 + plan.mb);
    for (int64_t n0 = 0; n0 < g.N; n0 += plan.nb) {
      int64_t n1 = std::min(g.N, n0 + plan.nb);
      int64_t w0 = 0;
      do {  // K windows (one unless an operand is windowed along K); K = 0 still runs once (beta * C)
        int64_t w1 = std::min(g.K, w0 + plan.kw);
        // The operands' windows (element start and count; whole tensors when not windowed).
        int64_t a_start = 0, a_count = -1, b_start = 0, b_count = -1;
        if (plan.window_a) {
          a_start = g.ta ? w0 * g.M : m0 * g.K;
          a_count = g.ta ? (w1 - w0) * g.M : (m1 - m0) * g.K;
        }
        if (plan.window_b) {
          b_start = g.tb ? n0 * g.K : w0 * g.N;
          b_count = g.tb ? (n1 - n0) * g.K : (w1 - w0) * g.N;
        }
        auto window = [&](const Tensor& t, int64_t start, int64_t count) {
          if (count < 0) return input(t);
          return Arg{t, false, static_cast<size_t>(start) * elem, static_cast<size_t>(count) * elem};
        };
        int64_t k0 = w0;
        do {
          int64_t k1 = std::min(w1, k0 + step);
          Launch l;
          l.shader = "matmul";
          l.variant = variant_for(y.dtype());
          l.spec = {c ? 1 : 0, epi.act, epi.residual ? 1 : 0};
          l.args = {window(a, a_start, a_count), window(b, b_start, b_count), input(c ? *c : table), input(table),
                    output(y), plan.partial ? output(partial) : input(table),
                    input(epi.residual ? *epi.residual : table)};
          l.groups[0] = static_cast<uint32_t>((n1 - n0 + 63) / 64);
          l.groups[1] = static_cast<uint32_t>((m1 - m0 + 63) / 64);
          l.groups[2] = static_cast<uint32_t>(batches);
          for (int64_t v : {m1 - m0, n1 - n0, k1, g.sam, g.sak, g.sbk, g.sbn, g.scm, g.scn}) l.push_u(v);
          l.push_f(g.alpha);
          l.push_f(g.beta);
          l.push_u(k0);
          l.push_u((k0 > 0 ? 1u : 0u) | (k1 < g.K ? 2u : 0u));
          // Shifts modulo 2^32: the block origin less the window start, in elements.
          for (int64_t v : {m0 * g.sam - a_start, n0 * g.sbn - b_start, m0 * g.scm + n0 * g.scn, m0 * g.N + n0, g.N})
            l.push_u(static_cast<uint64_t>(v));
          l.push_f(epi.alpha);
          l.push_f(epi.beta);
          launch(ctx, std::move(l));
          k0 = k1;
        } while (k0 < w1);
        w0 = w1;
      } while (w0 < g.K);
    }
  }
}

// MatMul as one (batched) product. Batch axes broadcast numpy-style; with one B for every
// batch, A's batches are consecutive rows of one (batches*M, K) product.
Gemm matmul_gemm(const KernelContext& ctx) {
  Shape as = ctx.in(0).shape(), bs = ctx.in(1).shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  Gemm g;
  g.M = as[as.size() - 2];
  g.K = as.back();
  g.N = bs.back();
  if (bs[bs.size() - 2] != g.K)
    throw ShapeError(str("[MatMul] inner dimensions differ: ", shape_str(ctx.in(0).shape()), " x ",
                         shape_str(ctx.in(1).shape())));
  g.sam = g.K, g.sak = 1, g.sbk = g.N, g.sbn = 1;
  if (ctx.has_input(2)) g.beta = 1, g.scm = 0, g.scn = 1;  // the fused bias: one row for every batch
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), rank - ab.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) out[i] = std::max(ab[i], bb[i]);
  int64_t batches = shape_numel(out);
  if (shape_numel(bb) == 1) {
    g.M *= batches;
    g.offsets = {0, 0};
    return g;
  }
  std::vector<int64_t> coord(rank, 0);
  for (int64_t t = 0; t < batches; ++t) {
    int64_t ao = 0, bo = 0, rest = t;
    for (size_t i = rank; i-- > 0;) {
      coord[i] = rest % out[i];
      rest /= out[i];
    }
    for (size_t i = 0; i < rank; ++i) {
      ao = ao * ab[i] + (ab[i] == 1 ? 0 : coord[i]);
      bo = bo * bb[i] + (bb[i] == 1 ? 0 : coord[i]);
    }
    g.offsets.push_back(static_cast<int32_t>(ao * g.M * g.K));
    g.offsets.push_back(static_cast<int32_t>(bo * g.K * g.N));
  }
  return g;
}

// Gemm (2-D operands, optional transposes, C broadcast unidirectionally to (M, N)).
Gemm gemm_gemm(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  bool ta = ctx.attrs->get_int("transA", 0) != 0, tb = ctx.attrs->get_int("transB", 0) != 0;
  Gemm g;
  g.ta = ta, g.tb = tb;
  g.M = ta ? a.dim(1) : a.dim(0);
  g.K = ta ? a.dim(0) : a.dim(1);
  g.N = tb ? b.dim(0) : b.dim(1);
  // A stored (M,K) row-major or (K,M) when transposed; likewise B.
  g.sam = ta ? 1 : g.K;
  g.sak = ta ? g.M : 1;
  g.sbk = tb ? 1 : g.N;
  g.sbn = tb ? g.K : 1;
  g.alpha = ctx.attrs->get_float("alpha", 1.0);
  g.beta = ctx.attrs->get_float("beta", 1.0);
  g.offsets = {0, 0};
  if (ctx.has_input(2)) {
    Shape cs = ctx.in(2).shape();
    cs.insert(cs.begin(), 2 - std::min<size_t>(cs.size(), 2), 1);
    g.scm = cs[0] == 1 ? 0 : cs[1];
    g.scn = cs[1] == 1 ? 0 : 1;
  }
  return g;
}

// Gemm's C, or MatMul's fused bias (porta_bias, a row added to every row of the product).
const Tensor* bias_of(const KernelContext& ctx) { return ctx.has_input(2) ? &ctx.in(2) : nullptr; }

void matmul_vulkan(KernelContext& ctx) {
  run_gemm(ctx, matmul_gemm(ctx), ctx.in(0), ctx.in(1), bias_of(ctx), ctx.out(0));
}

void gemm_vulkan(KernelContext& ctx) { run_gemm(ctx, gemm_gemm(ctx), ctx.in(0), ctx.in(1), bias_of(ctx), ctx.out(0)); }

// ---- the texel-buffer GEMM of CPU-like devices (matmul_texel.comp) ----------------------------

// The MatMul/Gemm call as matmul_texel.comp sees it. K (and N, when B is (K, N)) not a
// multiple of 4: the operand goes through a zero-padded copy (pack_blocks) with rows of Kp
// (Np) elements, and the GEMM runs over Kp. `why` says what it cannot take.
struct TexelCall {
  TexelGemm g;
  int64_t K = 0, N = 0, Kp = 0, Np = 0;
  bool pack_a = false, pack_b = false;
  int64_t a_rows = 0, b_blocks = 0;  // A as (a_rows, K); B as b_blocks (K, N) blocks or (b_rows, K)
};

TexelCall texel_call_of(const KernelContext& ctx, std::string& why) {
  Gemm g = ctx.op->name == "Gemm" ? gemm_gemm(ctx) : matmul_gemm(ctx);
  TexelCall t;
  t.K = g.K, t.N = g.N;
  t.Kp = (g.K + 3) / 4 * 4;
  t.Np = g.tb ? g.N : (g.N + 3) / 4 * 4;
  // Nothing to pad when no product is read (an empty Y, or K = 0: Y = beta * C).
  const bool reads = g.M > 0 && g.N > 0 && g.K > 0;
  t.pack_a = reads && t.Kp != g.K;
  t.pack_b = reads && (t.Kp != g.K || t.Np != g.N);
  int64_t a_numel = ctx.in(0).numel(), b_numel = ctx.in(1).numel();
  t.a_rows = g.K ? a_numel / g.K : 0;
  t.b_blocks = g.K && g.N ? b_numel / (g.K * g.N) : 0;
  TexelGemm& x = t.g;
  x.M = g.M, x.N = g.N, x.K = t.Kp, x.ldb = t.Np / 4, x.b_t = g.tb;
  x.alpha = g.alpha, x.beta = g.beta, x.scm = g.scm, x.scn = g.scn;
  x.offsets.clear();
  for (size_t i = 0; i + 1 < g.offsets.size(); i += 2) {
    int64_t a_off = g.offsets[i], b_off = g.offsets[i + 1];
    if (t.pack_a) a_off = a_off / g.K * t.Kp;
    if (t.pack_b) b_off = g.tb ? b_off / g.K * t.Kp : b_off / (g.K * g.N) * (t.Kp * t.Np);
    x.offsets.insert(x.offsets.end(), {static_cast<int32_t>(a_off), static_cast<int32_t>(b_off), 0,
                                       static_cast<int32_t>(i / 2 * g.M * g.N)});
  }
  if (g.ta) why = "transA = 1 (A is read along K)";
  return t;
}

void matmul_texel(KernelContext& ctx) {
  std::string why;
  TexelCall t = texel_call_of(ctx, why);
  if (!why.empty()) throw BackendError(str("[", ctx.op->name, "] ", why, " (supports should decline)"));
  if (ctx.out(0).numel() == 0) return;
  Tensor a = ctx.in(0), b = ctx.in(1);
  if (t.pack_a) a = pack_input(ctx, 0, 1, t.a_rows, t.K, t.a_rows, t.Kp);
  if (t.pack_b)
    b = t.g.b_t ? pack_input(ctx, 1, 1, t.N, t.K, t.N, t.Kp) : pack_input(ctx, 1, t.b_blocks, t.K, t.N, t.Kp, t.Np);
  launch_texel_gemm(ctx, t.g, a, b, bias_of(ctx), ctx.out(0), epilogue_of(ctx));
}

// What the texel GEMM needs of a call; with `loops` also its K loop within the driver's cap.
std::string texel_call_ok(const KernelContext& ctx, bool loops) {
  DType t = ctx.in(0).dtype();
  if (auto why = float_texels_ok(ctx, t, "the shared-memory tiled GEMM"); !why.empty()) return why;
  if (ctx.in(1).dtype() != t) return "A and B have different dtypes";
  if (ctx.has_input(2) && ctx.in(2).dtype() != t) return "C has another dtype";
  if (ctx.in(0).rank() < 1 || ctx.in(1).rank() < 1) return "scalar operand";
  if (ctx.op->name == "Gemm") {
    if (ctx.in(0).rank() != 2 || ctx.in(1).rank() != 2) return fits_bindings(ctx);  // inference reports it
    bool ta = ctx.attrs->get_int("transA", 0) != 0, tb = ctx.attrs->get_int("transB", 0) != 0;
    if (ctx.in(0).dim(ta ? 0 : 1) != ctx.in(1).dim(tb ? 1 : 0)) return fits_bindings(ctx);  // run reports it
  }
  TexelCall call;
  std::string why;
  try {
    call = texel_call_of(ctx, why);
  } catch (const Error&) {
    return fits_bindings(ctx);  // the shapes do not multiply: run reports it
  }
  if (!why.empty()) return why;
  const TexelGemm& g = call.g;
  const uint64_t limit = binding_limit(ctx);
  // The padded copies are written through one binding each.
  uint64_t a_packed = call.pack_a ? static_cast<uint64_t>(call.a_rows * call.Kp) : 0;
  uint64_t b_packed = !call.pack_b ? 0
                      : g.b_t      ? static_cast<uint64_t>(call.N * call.Kp)
                                   : static_cast<uint64_t>(call.b_blocks * call.Kp * call.Np);
  for (uint64_t n : {a_packed, b_packed})
    if (n * dtype_size(t) > limit || n >= (uint64_t{1} << 31))
      return str("a zero-padded copy of an operand (K = ", call.K, ", N = ", call.N, ") takes ", n * dtype_size(t),
                 " bytes, more than one binding (", limit, ")");
  int64_t y_numel = g.batches() * g.M * g.N, c_numel = ctx.has_input(2) ? ctx.in(2).numel() : 0;
  for (auto [what, n] : {std::pair<const char*, int64_t>{"Y", y_numel}, {"C", c_numel}}) {
    if (n >= (int64_t{1} << 31)) return str(what, " has more than 2^31 elements");
    if (static_cast<uint64_t>(n) * dtype_size(t) > limit)
      return str(what, " has ", n * dtype_size(t), " bytes, more than the device's maxStorageBufferRange (", limit, ")");
  }
  return texel_gemm_fits(ctx, g, a_packed ? static_cast<int64_t>(a_packed) : ctx.in(0).numel(),
                         b_packed ? static_cast<int64_t>(b_packed) : ctx.in(1).numel(), !loops);
}

std::string texel_supports(const KernelContext& ctx) { return texel_call_ok(ctx, true); }

// ---- "rows": a few rows of A against a weight streamed once (matmul_rows.comp) ------------------

void matmul_rows(KernelContext& ctx) {
  std::string why;
  TexelCall t = texel_call_of(ctx, why);
  if (!why.empty()) throw BackendError(str("[", ctx.op->name, "] ", why, " (supports should decline)"));
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  Tensor a = ctx.in(0);
  if (t.pack_a) a = pack_input(ctx, 0, 1, t.a_rows, t.K, t.a_rows, t.Kp);
  const TexelGemm& g = t.g;
  RowsGemm r;
  r.N = g.N, r.Kp = t.Kp, r.rows = g.M;
  r.ym = g.N, r.yn = 1;
  r.scm = g.scm, r.scn = g.scn, r.alpha = g.alpha, r.beta = g.beta;
  launch_rows_gemm(ctx, r, a, rows_weight(ctx, 1, g.N, t.K, g.b_t, false, g.M), bias_of(ctx), y, epilogue_of(ctx));
}

// Gemm, and MatMul against a 1-D or 2-D B (a Linear layer's weight), with at most kRowsMaxM
// rows of A, B either way round (it is packed), K > 0.
std::string rows_supports(const KernelContext& ctx) {
  if (auto why = float_texels_ok(ctx, ctx.in(0).dtype(), "the shared-memory tiled GEMM"); !why.empty()) return why;
  if (ctx.op->name == "Gemm") {
    if (ctx.in(0).rank() != 2 || ctx.in(1).rank() != 2) return fits_bindings(ctx);  // inference reports it
  } else if (ctx.in(1).rank() > 2) {
    return str("B has batches (", shape_str(ctx.in(1).shape()), "; it takes a 1-D or 2-D B)");
  }
  if (auto why = texel_call_ok(ctx, false); !why.empty()) return why;
  std::string unused;
  const TexelCall t = texel_call_of(ctx, unused);
  if (t.g.M > kRowsMaxM) return str(t.g.M, " rows of A (it takes at most ", kRowsMaxM, ")");
  if (t.K == 0) return "K = 0 (no product to stream)";
  if (t.g.batches() != 1) return "more than one batch";
  if (t.g.scm * (t.g.M - 1) + t.g.scn * (t.g.N - 1) >= (int64_t{1} << 31)) return "C indexes past 2^31";
  return rows_gemm_ok(ctx, 1, t.N, t.K, t.g.b_t, false, 1, t.g.M);
}

std::string matmul_supports(const KernelContext& ctx) {
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (ctx.in(0).dtype() != ctx.in(1).dtype()) return "A and B have different dtypes";
  if (ctx.has_input(2) && ctx.in(2).dtype() != ctx.in(0).dtype()) return "C has another dtype";
  if (ctx.in(0).rank() < 1 || ctx.in(1).rank() < 1) return "scalar operand";
  const Shape &as = ctx.in(0).shape(), &bs = ctx.in(1).shape();
  Dims d{};
  d.elem = dtype_size(ctx.in(0).dtype());
  d.a_numel = ctx.in(0).numel();
  d.b_numel = ctx.in(1).numel();
  d.c_numel = ctx.has_input(2) ? ctx.in(2).numel() : 0;
  d.batches = 1;
  if (ctx.op->name == "Gemm") {
    if (as.size() != 2 || bs.size() != 2) return fits_bindings(ctx);  // shape inference rejects these
    d.ta = ctx.attrs->get_int("transA", 0) != 0, d.tb = ctx.attrs->get_int("transB", 0) != 0;
    d.K = d.ta ? as[0] : as[1];
    d.M = d.ta ? as[1] : as[0];
    d.N = d.tb ? bs[0] : bs[1];
    if ((d.tb ? bs[1] : bs[0]) != d.K) return fits_bindings(ctx);  // run reports the mismatch
  } else {
    d.K = as.back();
    d.M = as.size() >= 2 ? as[as.size() - 2] : 1;
    d.N = bs.size() >= 2 ? bs.back() : 1;
    if ((bs.size() >= 2 ? bs[bs.size() - 2] : bs[0]) != d.K) return fits_bindings(ctx);  // run reports it
    // MatMul's broadcast batch count, as matmul_vulkan folds it.
    size_t ra = as.size() > 2 ? as.size() - 2 : 0, rb = bs.size() > 2 ? bs.size() - 2 : 0, rank = std::max(ra, rb);
    int64_t b_batches = 1;
    for (size_t i = 0; i < rank; ++i) {
      int64_t da = i + ra >= rank ? as[i + ra - rank] : 1, db = i + rb >= rank ? bs[i + rb - rank] : 1;
      d.batches *= std::max(da, db);
      b_batches *= db;
    }
    if (b_batches == 1) d.M *= d.batches, d.batches = 1;
  }
  return plan_gemm(ctx, d).why;
}

}  // namespace

constexpr int64_t kTexelTileN = 8;
// At most 32 rows where K is long enough (kTexelLongK) to amortize a tile's set-up and stores,
// else 16 (a 3x3 conv's Winograd products of K = 64 took 1.4x longer in 32-row tiles).
constexpr int64_t kTexelTileMaxM = 32, kTexelTileMaxShortK = 16, kTexelLongK = 512;
constexpr uint32_t kTexelLocal = 64;
constexpr uint64_t kTexelGroupsWanted = 8;

// Rows of Y per invocation of matmul_texel.comp (TM) and invocations per workgroup. Each step
// of K fetches TM texels of A and 8 of B for 32 x TM multiply-adds, and on lavapipe the
// gathers, not the multiply-adds, bound the product: an invocation's cost grows slowly with TM
// (chains of 768 x 768 products of 64 rows, one thread: 8 rows 4.25, 16 rows 3.43, 32 rows
// 2.92 ms a product; of 17 rows: 4 rows 1.71, 17 rows 0.95). So TM is as large as the cap
// below allows, balanced over the rows (17 rows: one tile of 17, not 24 rows of
// which 7 are waste); and as fewer tiles mean fewer invocations, the workgroups shrink (down
// to 8 invocations) to stay kTexelGroupsWanted for the driver's threads, and only past that
// do the tiles get fewer rows (down to 4).
struct TexelTiling {
  int64_t tm = 8;
  uint32_t local = kTexelLocal;
};
TexelTiling texel_tiling(const TexelGemm& g) {
  const int64_t tiles_nb = ((g.N + kTexelTileN - 1) / kTexelTileN) * g.batches();
  TexelTiling t;
  for (int64_t cap = g.K >= kTexelLongK ? kTexelTileMaxM : kTexelTileMaxShortK;; cap /= 2) {
    const int64_t row_tiles = std::max<int64_t>((g.M + cap - 1) / cap, 1);
    t.tm = std::max<int64_t>((g.M + row_tiles - 1) / row_tiles, 1);
    const uint64_t tiles = static_cast<uint64_t>(row_tiles * tiles_nb);
    t.local = kTexelLocal;
    while (t.local > 8 && (tiles + t.local - 1) / t.local < kTexelGroupsWanted) t.local /= 2;
    if (cap <= 4 || (tiles + t.local - 1) / t.local >= kTexelGroupsWanted) return t;
  }
}

std::string texel_gemm_fits(const KernelContext& ctx, const TexelGemm& g, int64_t a_numel, int64_t b_numel,
                            bool operands_only) {
  const DeviceCaps& caps = device_caps(ctx);
  for (auto [what, n, per] : {std::tuple<const char*, int64_t, int64_t>{"A", a_numel, 4}, {"B", b_numel, g.b_scalar ? 1 : 4}}) {
    if (n >= (int64_t{1} << 31)) return str(what, " has more than 2^31 elements");
    if (static_cast<uint64_t>(n + per - 1) / per > caps.max_texels)
      return str(what, " has ", (n + per - 1) / per, " texels, more than the device's maxTexelBufferElements (",
                 caps.max_texels, ")");
  }
  if (operands_only) return "";
  if (g.batches() > static_cast<int64_t>(caps.max_groups[2])) return str(g.batches(), " batches exceed the device's workgroup count");
  const TexelTiling t = texel_tiling(g);
  uint64_t tiles = static_cast<uint64_t>((g.N + kTexelTileN - 1) / kTexelTileN) * static_cast<uint64_t>((g.M + t.tm - 1) / t.tm);
  if ((tiles + t.local - 1) / t.local > static_cast<uint64_t>(caps.max_groups[0]) * caps.max_groups[1])
    return "grid beyond the device's workgroup count";
  // The K loop runs K/4 times; the shader's other loops are unrolled constants (counted anyway:
  // per row of the tile its A row, its accumulators, 8 output passes, with their exits).
  return loop_budget_ok(ctx, static_cast<uint64_t>(g.K / 4) + 1 + 12 * static_cast<uint64_t>(t.tm) + 10,
                        str("K = ", g.K));
}

Tensor pack_blocks(const KernelContext& ctx, const Tensor& src, int64_t blocks, int64_t rows, int64_t cols,
                   int64_t dst_rows, int64_t dst_cols) {
  Tensor dst = Tensor::empty({blocks * dst_rows * dst_cols}, src.dtype(), ctx.device);
  uint64_t total = static_cast<uint64_t>(blocks * dst_rows * dst_cols / 4);
  if (total == 0) return dst;
  Launch l;
  l.shader = "pack";
  l.variant = variant_for(src.dtype());
  l.args = {input(src), output(dst)};
  for (uint64_t v : {total, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), static_cast<uint64_t>(dst_rows),
                     static_cast<uint64_t>(dst_cols)})
    l.push_u(v);
  set_grid(l, device_caps(ctx), (total + 255) / 256);
  launch(ctx, std::move(l));
  return dst;
}

TexelGemmState& texel_state(KernelContext& ctx) {
  if (!ctx.state) ctx.state = std::make_shared<TexelGemmState>();
  return *static_cast<TexelGemmState*>(ctx.state.get());
}

Tensor derive_input(KernelContext& ctx, size_t i, const std::array<int64_t, 5>& geometry,
                    const std::function<Tensor()>& make) {
  const Tensor& src = ctx.in(i);
  if (!ctx.is_constant_input(i)) return make();
  TexelGemmState& s = texel_state(ctx);
  for (const TexelGemmState::Packed& p : s.packed)
    if (p.storage == src.storage().get() && p.offset == src.offset() && p.shape == src.shape() && p.geometry == geometry)
      return p.padded;
  if (s.packed.size() >= 4) s.packed.clear();  // a call site binds a handful of constants
  s.packed.push_back({src.storage().get(), src.offset(), src.shape(), geometry, make()});
  return s.packed.back().padded;
}

Tensor pack_input(KernelContext& ctx, size_t i, int64_t blocks, int64_t rows, int64_t cols, int64_t dst_rows,
                  int64_t dst_cols) {
  return derive_input(ctx, i, {blocks, rows, cols, dst_rows, dst_cols},
                      [&] { return pack_blocks(ctx, ctx.in(i), blocks, rows, cols, dst_rows, dst_cols); });
}

// matmul_rows.comp: RB rows of W per invocation, 8 invocations per packed block (its layout);
// the in-place path takes 4 rows per subgroup.
constexpr int64_t kRowsInPlace = 4;
constexpr uint32_t kRowsLocal = 8;

int64_t rows_packed_texels(int64_t N, int64_t K, int64_t rb) {
  return (N + 8 * rb - 1) / (8 * rb) * (8 * rb) * ((K + 3) / 4);
}

// 8 rows of W per invocation where the product has 4 rows or more per image (A's texels, or the
// 4 x 4 transposes of a Conv's columns, then serve 8 rows of W: 1.2-1.3x over 4 for convs over
// 2x2 to 4x4 maps); 4 for 1 to 3 rows (a Linear layer at batch 1: 8 was 1.1-1.3x slower).
int64_t rows_per_invocation(int64_t rows) { return rows >= 4 ? 8 : 4; }

// Weights stored (N, K) larger than half a binding (64 MiB on lavapipe) are read in place.
bool rows_in_place(const KernelContext& ctx, const Tensor& w, int64_t K, bool b_t, bool a_t) {
  return !a_t && b_t && K % 4 == 0 && static_cast<uint64_t>(w.numel()) * dtype_size(w.dtype()) > binding_limit(ctx) / 2;
}

RowsWeight rows_weight(KernelContext& ctx, size_t i, int64_t N, int64_t K, bool b_t, bool a_t, int64_t rows) {
  const Tensor& src = ctx.in(i);
  if (rows_in_place(ctx, src, K, b_t, a_t)) return {src, false, kRowsInPlace};
  const int64_t rb = rows_per_invocation(rows);
  return {derive_input(ctx, i, {-32, N, K, b_t ? 1 : 0, rb}, [&] {
            const Tensor& w = ctx.in(i);
            const int64_t kt = (K + 3) / 4, total = rows_packed_texels(N, K, rb), block = 8 * rb * kt;
            Tensor wp = Tensor::empty({total * 4}, w.dtype(), ctx.device);
            // Whole blocks per dispatch, as many as one binding holds (rows_gemm_ok checks that
            // one does); their byte offsets are multiples of 256.
            const uint64_t block_bytes = static_cast<uint64_t>(block * 4) * dtype_size(w.dtype());
            const int64_t per_slice = static_cast<int64_t>(std::max<uint64_t>(1, binding_limit(ctx) / block_bytes)) * block;
            for (int64_t first = 0; first < total; first += per_slice) {
              const int64_t n = std::min(per_slice, total - first);
              Launch l;
              l.shader = "pack_rows";
              l.variant = variant_for(w.dtype());
              l.spec = {b_t ? 1 : 0, static_cast<int32_t>(rb)};
              l.args = {scalar_texels(w), {wp, true, static_cast<size_t>(first) * 4 * dtype_size(w.dtype()),
                                           static_cast<size_t>(n) * 4 * dtype_size(w.dtype())}};
              for (int64_t v : {n, first, N, K, kt}) l.push_u(static_cast<uint64_t>(v));
              set_grid(l, device_caps(ctx), (static_cast<uint64_t>(n) + 255) / 256);
              launch(ctx, std::move(l));
            }
            return wp;
          }),
          true, rb};
}

// The PRE and PRE_ACT constants, pre_alpha and pre_beta, and the S and T bindings that
// matmul_rows.comp and matmul_texel.comp declare last (`stand_in`, a texel view of an operand,
// bound without a map).
namespace {
void add_channel_map(Launch& l, const ChannelMap& m, const Arg& stand_in) {
  l.spec.push_back(m.scale ? 1 : 0);
  l.spec.push_back(m.scale ? m.act : 0);
  l.push_f(m.scale ? m.alpha : 0.0);
  l.push_f(m.scale ? m.beta : 0.0);
  l.args.push_back(m.scale ? texels(*m.scale) : stand_in);
  l.args.push_back(m.scale ? texels(*m.shift) : stand_in);
}
}  // namespace

void launch_rows_gemm(KernelContext& ctx, const RowsGemm& g, const Tensor& a, const RowsWeight& w, const Tensor* c,
                      Tensor& y, const Epilogue& epi) {
  if (y.numel() == 0 || g.rows == 0 || g.images == 0) return;
  const int64_t tm = g.rows, kt = g.Kp / 4;
  if (tm > kRowsMax) throw BackendError(str("[rows] internal: ", tm, " rows per image (at most ", kRowsMax, ")"));
  if (g.a_scalar && !g.a_t) throw BackendError("[rows] internal: A by element is read as stored (K, M) only");
  Launch l;
  l.shader = "matmul_rows";
  l.variant = variant_for(y.dtype());
  l.spec = {c ? 1 : 0, static_cast<int32_t>(tm), g.a_t ? 1 : 0};
  l.args = {g.a_scalar ? scalar_texels(a) : texels(a), texels(w.w), input(c ? *c : y), output(y)};
  const uint64_t quads = static_cast<uint64_t>((g.N + w.rb - 1) / w.rb);
  if (w.packed) {
    l.local_size = kRowsLocal;
    set_grid(l, device_caps(ctx), (quads + kRowsLocal - 1) / kRowsLocal);
  } else {
    // A subgroup per 4 rows of W: whole subgroups per workgroup.
    if (g.a_t || tm > kRowsMaxM) throw BackendError("[rows] internal: W in place takes at most 8 rows of A, not stored (K, M)");
    const uint32_t lanes = std::max<uint32_t>(device_caps(ctx).subgroup_size, 1);
    l.local_size = std::max(kRowsLocal, lanes);
    const uint64_t subgroups = l.local_size / lanes;
    set_grid(l, device_caps(ctx), (quads + subgroups - 1) / subgroups);
  }
  l.groups[2] = static_cast<uint32_t>(g.images);
  const int64_t a_last = g.a_scalar ? a.numel() - 1 : (a.numel() + 3) / 4 - 1;
  for (int64_t v : {g.N, kt, g.rows, g.lda, g.a_img, a_last, g.y_base, g.y_img, g.ym, g.yn, g.scm, g.scn})
    l.push_u(static_cast<uint64_t>(v));
  l.push_f(g.alpha);
  l.push_f(g.beta);
  epi.add_to(l, y);
  l.spec.push_back(w.packed ? 1 : 0);
  l.spec.push_back(static_cast<int32_t>(w.rb));
  l.spec.push_back(g.a_scalar ? 1 : 0);
  // Y (and R) by vectors of 4 rows of the product where those lie side by side.
  const bool vec_out = w.packed && tm % 4 == 0 && g.ym == 1 && g.scm == 0 && g.y_base % 4 == 0 && g.y_img % 4 == 0 &&
                       g.yn % 4 == 0 && y.offset() % 4 == 0 && (!epi.residual || epi.residual->offset() % 4 == 0);
  l.spec.push_back(vec_out ? 1 : 0);
  l.args.push_back(output(y));
  l.args.push_back(input(epi.residual ? *epi.residual : y));
  if (g.pre.scale && !g.a_t) throw BackendError("[rows] internal: a channel map needs A stored (K, M)");
  add_channel_map(l, g.pre, g.a_scalar ? scalar_texels(a) : texels(a));
  // A's values of a step fetched once per subgroup and passed round, where a workgroup is one
  // whole subgroup (lavapipe: 8 and 8). The classifier head of squeezenet1_1 (1000 x 512 over
  // 3x3, A by element): 5 such convs 1524 -> 1111 us on vulkan:0.
  const DeviceCaps& caps = device_caps(ctx);
  const bool share = w.packed && caps.subgroup_shuffle && caps.subgroup_size == l.local_size &&
                     device_context(ctx).shared_rows_operand;
  l.spec.push_back(share ? static_cast<int32_t>(caps.subgroup_size) : 0);
  launch(ctx, std::move(l));
}

std::string rows_gemm_ok(const KernelContext& ctx, size_t w_input, int64_t N, int64_t K, bool b_t, bool a_t,
                         int64_t images, int64_t rows) {
  if (auto why = cpu_like_ok(ctx, "the shared-memory tiled GEMM"); !why.empty()) return why;
  if (auto why = reductions_ok(ctx); !why.empty()) return why;  // the in-place path's subgroupAdd
  const DeviceCaps& caps = device_caps(ctx);
  const Tensor& w = ctx.in(w_input);
  const bool in_place = rows_in_place(ctx, w, K, b_t, a_t);
  if (rows > kRowsMax) return str(rows, " rows of the product per image (it takes at most ", kRowsMax, ")");
  const int64_t rb = in_place ? kRowsInPlace : rows_per_invocation(rows);
  const int64_t kt = (K + 3) / 4, packed = rows_packed_texels(N, K, rb);
  if (static_cast<uint64_t>(N) * static_cast<uint64_t>(K) > caps.max_texels)
    return str("W has ", N * K, " elements, more than maxTexelBufferElements (", caps.max_texels, ")");
  if (!in_place) {
    if (static_cast<uint64_t>(packed) > caps.max_texels || packed >= (int64_t{1} << 31))
      return str("W packed takes ", packed, " texels, more than maxTexelBufferElements (", caps.max_texels,
                 ") or 2^31");
    if (static_cast<uint64_t>(8 * rb * kt * 4) * dtype_size(w.dtype()) > binding_limit(ctx))
      return str(8 * rb, " rows of W (K = ", K, ") take more than one binding");
  }
  if (static_cast<uint64_t>(images) > caps.max_groups[2])
    return str(images, " images exceed the grid's ", caps.max_groups[2]);
  if (auto why = grid_ok(ctx, (static_cast<uint64_t>(N) + rb * kRowsLocal - 1) / (rb * kRowsLocal), "the rows of W");
      !why.empty())
    return why;
  // The K loop, and the rows' store loop.
  return loop_budget_ok(ctx, static_cast<uint64_t>(kt + rows * rb + 2), str("K = ", K));
}

void launch_texel_gemm(KernelContext& ctx, const TexelGemm& g, const Tensor& a, const Tensor& b, const Tensor* c,
                       Tensor& y, const Epilogue& epi) {
  if (y.numel() == 0) return;
  // The offsets table is uploaded once per call site and shape (a chunked Conv has a few).
  TexelGemmState& s = texel_state(ctx);
  Tensor table;
  for (const auto& [offsets, t] : s.tables)
    if (offsets == g.offsets) table = t;
  if (!table.defined()) {
    table = Tensor::from_host(g.offsets.data(), {static_cast<int64_t>(g.offsets.size())}, DType::i32, ctx.device);
    if (s.tables.size() >= 16) s.tables.clear();
    s.tables.emplace_back(g.offsets, table);
  }
  const TexelTiling t = texel_tiling(g);
  const int64_t tm = t.tm;
  int64_t tiles_n = (g.N + kTexelTileN - 1) / kTexelTileN;
  int64_t tiles = tiles_n * ((g.M + tm - 1) / tm);
  Launch l;
  l.shader = "matmul_texel";
  l.variant = variant_for(y.dtype());
  l.spec = {c ? 1 : 0, g.b_t ? 1 : 0};
  l.local_size = t.local;
  l.args = {texels(a), g.b_scalar ? scalar_texels(b) : texels(b), input(c ? *c : table), input(table), output(y)};
  set_grid(l, device_caps(ctx), (static_cast<uint64_t>(tiles) + t.local - 1) / t.local);
  l.groups[2] = static_cast<uint32_t>(g.batches());
  for (int64_t v : {g.M, g.N, g.K, tiles_n, g.ldb, g.scm, g.scn}) l.push_u(v);
  l.push_f(g.alpha);
  l.push_f(g.beta);
  epi.add_to(l, table);
  l.spec.push_back(static_cast<int32_t>(tm));
  // Whole vec4 stores where every row of Y starts on a multiple of 4 elements.
  bool vec = (g.glu ? g.N / 2 : g.N) % 4 == 0;
  for (size_t b = 3; b < g.offsets.size(); b += 4) vec = vec && g.offsets[b] % 4 == 0;
  l.spec.push_back(vec ? 1 : 0);
  l.spec.push_back(g.b_scalar ? 1 : 0);
  l.spec.push_back(g.glu ? 1 : 0);
  if (g.rms && (g.b_t || g.b_scalar)) throw BackendError("[texel] internal: RMS rows with B stored (K, N) only");
  l.spec.push_back(g.rms ? 1 : 0);
  l.push_f(g.rms ? g.rms_eps : 0.0);
  l.args.push_back(output(y));
  l.args.push_back(input(epi.residual ? *epi.residual : table));
  if (g.pre.scale && (g.b_t || g.glu)) throw BackendError("[texel] internal: a channel map needs B stored (K, N)");
  add_channel_map(l, g.pre, texels(a));
  launch(ctx, std::move(l));
}

// Every MatMul implementation adds a fused bias (porta_bias) of A's dtype and a fused
// residual (porta_residual, Y's dtype) and applies every fused activation (activation.glsl).
const bool matmul_registered = [] {
  std::vector<std::string> fused = fused_activation_list();
  fused.push_back("porta_bias");
  fused.push_back("porta_residual");
  register_kernel_at_load(kernel_applying("MatMul", kF32 | kF16, matmul_rows, rows_supports, {"rows", 20}, fused));
  register_kernel_at_load(kernel_applying("MatMul", kF32 | kF16, matmul_texel, texel_supports, {"texel", 10}, fused));
  register_kernel_at_load(kernel_applying("MatMul", kF32 | kF16, matmul_vulkan, matmul_supports, {"tiled", 0}, fused));
  return true;
}();
// Every Gemm implementation adds a fused residual and applies every fused activation where it
// writes Y.
const bool gemm_registered = [] {
  std::vector<std::string> fused = conv_fused_activations();  // the activations and porta_residual
  register_kernel_at_load(kernel_applying("Gemm", kF32 | kF16, matmul_rows, rows_supports, {"rows", 20}, fused));
  register_kernel_at_load(kernel_applying("Gemm", kF32 | kF16, matmul_texel, texel_supports, {"texel", 10}, fused));
  register_kernel_at_load(kernel_applying("Gemm", kF32 | kF16, gemm_vulkan, matmul_supports, {"tiled", 0}, fused));
  return true;
}();

}  // namespace porta::vk
