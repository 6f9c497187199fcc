// MatMul and Gemm on vulkan: matmul.comp (tiled, fp32 accumulation). MatMul broadcasts batch
// axes through a per-batch offset table; 1-D operands follow numpy (prepend/append a unit
// axis, removed from the result by the inferred output shape). Where the driver caps the loop
// iterations of an invocation (lavapipe), a long inner dimension is summed over several
// dispatches through an fp32 scratch of Y's size (matmul_loops).
#include <algorithm>

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
  double alpha = 1, beta = 0;
  std::vector<int32_t> offsets;  // (a_off, b_off) per batch
};

void run_gemm(KernelContext& ctx, const Gemm& g, const Tensor& a, const Tensor& b, const Tensor* c,
              Tensor& y) {
  int64_t batches = static_cast<int64_t>(g.offsets.size() / 2);
  if (y.numel() == 0) return;
  const DeviceCaps& caps = device_caps(ctx);
  Tensor table = Tensor::from_host(g.offsets.data(), {static_cast<int64_t>(g.offsets.size())}, DType::i32,
                                   ctx.device);
  Launch l;
  l.shader = "matmul";
  l.variant = variant_for(y.dtype());
  l.spec = {c ? 1 : 0};
  l.args = {input(a), input(b), input(c ? *c : a), input(table), output(y)};
  l.groups[0] = static_cast<uint32_t>((g.N + 63) / 64);
  l.groups[1] = static_cast<uint32_t>((g.M + 63) / 64);
  l.groups[2] = static_cast<uint32_t>(batches);
  if (l.groups[0] > caps.max_groups[0] || l.groups[1] > caps.max_groups[1] || l.groups[2] > caps.max_groups[2])
    throw Unsupported(str("[", ctx.op->name, "] grid beyond the device's workgroup count"));
  int64_t tiles = (g.K + kTileK - 1) / kTileK, per = tiles_per_dispatch(ctx);
  if (per < 1) throw BackendError(str("[", ctx.op->name, "] one K tile exceeds the loop cap (supports should decline)"));
  auto push = [&](Launch& d, int64_t k_begin, int64_t k_end, uint32_t pass) {
    for (int64_t v : {g.M, g.N, k_end, g.sam, g.sak, g.sbk, g.sbn, g.scm, g.scn}) d.push_u(v);
    d.push_f(g.alpha);
    d.push_f(g.beta);
    d.push_u(k_begin);
    d.push_u(pass);
  };
  if (tiles <= per) {  // one dispatch; the offset table stands in for the unused Partial binding
    l.args.push_back(input(table));
    push(l, 0, g.K, 0);
    launch(ctx, std::move(l));
    return;
  }
  // K slices of `per` tiles each, summed in fp32 through `partial` (indexed like Y).
  Tensor partial = Tensor::empty({batches * g.M * g.N}, DType::f32, ctx.device);
  l.args.push_back(output(partial));
  for (int64_t k_begin = 0; k_begin < g.K; k_begin += per * kTileK) {
    int64_t k_end = std::min(g.K, k_begin + per * kTileK);
    Launch d = l;
    push(d, k_begin, k_end, (k_begin > 0 ? 1u : 0u) | (k_end < g.K ? 2u : 0u));
    launch(ctx, std::move(d));
  }
}

void matmul_vulkan(KernelContext& ctx) {
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
  // Batch axes broadcast numpy-style.
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), rank - ab.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) out[i] = std::max(ab[i], bb[i]);
  int64_t batches = shape_numel(out);
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
  run_gemm(ctx, g, ctx.in(0), ctx.in(1), nullptr, ctx.out(0));
}

void gemm_vulkan(KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  bool ta = ctx.attrs->get_int("transA", 0) != 0, tb = ctx.attrs->get_int("transB", 0) != 0;
  Gemm g;
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
  const Tensor* c = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  if (c) {
    // Unidirectional broadcast of C to (M, N).
    Shape cs = c->shape();
    cs.insert(cs.begin(), 2 - std::min<size_t>(cs.size(), 2), 1);
    g.scm = cs[0] == 1 ? 0 : cs[1];
    g.scn = cs[1] == 1 ? 0 : 1;
  }
  run_gemm(ctx, g, a, b, c, ctx.out(0));
}

std::string matmul_supports(const KernelContext& ctx) {
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (ctx.in(0).dtype() != ctx.in(1).dtype()) return "A and B have different dtypes";
  if (ctx.has_input(2) && ctx.in(2).dtype() != ctx.in(0).dtype()) return "C has another dtype";
  if (ctx.in(0).rank() < 1 || ctx.in(1).rank() < 1) return "scalar operand";
  // The inner dimension is split over dispatches under the loop cap, down to one K tile each.
  const Shape &as = ctx.in(0).shape(), &bs = ctx.in(1).shape();
  int64_t k = as.back(), rows = as.size() >= 2 ? as[as.size() - 2] : 1, cols = bs.size() >= 2 ? bs.back() : 1;
  int64_t batches = 1;  // MatMul's broadcast batch count
  if (ctx.op->name == "Gemm") {
    if (as.size() != 2 || bs.size() != 2) return fits_bindings(ctx);  // shape inference rejects these
    bool ta = ctx.attrs->get_int("transA", 0) != 0, tb = ctx.attrs->get_int("transB", 0) != 0;
    k = ta ? as[0] : as[1];
    rows = ta ? as[1] : as[0];
    cols = tb ? bs[0] : bs[1];
  } else {
    size_t ra = as.size() > 2 ? as.size() - 2 : 0, rb = bs.size() > 2 ? bs.size() - 2 : 0, rank = std::max(ra, rb);
    for (size_t i = 0; i < rank; ++i) {
      int64_t da = i + ra >= rank ? as[i + ra - rank] : 1, db = i + rb >= rank ? bs[i + rb - rank] : 1;
      batches *= std::max(da, db);
    }
  }
  int64_t per = tiles_per_dispatch(ctx);
  if (per < 1) return loop_budget_ok(ctx, matmul_loops(1), "one 16-deep K tile of the tiled GEMM");
  if ((k + kTileK - 1) / kTileK > per) {
    uint64_t scratch = static_cast<uint64_t>(batches * rows * cols) * 4;
    if (scratch > device_caps(ctx).max_storage_range)
      return str("K = ", k, " is summed over several dispatches (loop cap) through an fp32 scratch of ", scratch,
                 " bytes, more than the device's maxStorageBufferRange");
  }
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(MatMul, vulkan, kF32 | kF16, matmul_vulkan, matmul_supports)
PORTA_REGISTER_KERNEL_IF(Gemm, vulkan, kF32 | kF16, gemm_vulkan, matmul_supports)

}  // namespace porta::vk
