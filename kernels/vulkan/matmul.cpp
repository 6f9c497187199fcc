// MatMul and Gemm on vulkan: matmul.comp (tiled, fp32 accumulation). MatMul broadcasts batch
// axes through a per-batch offset table; 1-D operands follow numpy (prepend/append a unit
// axis, removed from the result by the inferred output shape).
#include "kernels/vulkan/vk_kernel.hpp"

namespace porta::vk {
namespace {

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
  for (int64_t v : {g.M, g.N, g.K, g.sam, g.sak, g.sbk, g.sbn, g.scm, g.scn}) l.push_u(v);
  l.push_f(g.alpha);
  l.push_f(g.beta);
  l.groups[0] = static_cast<uint32_t>((g.N + 63) / 64);
  l.groups[1] = static_cast<uint32_t>((g.M + 63) / 64);
  l.groups[2] = static_cast<uint32_t>(batches);
  if (l.groups[0] > caps.max_groups[0] || l.groups[1] > caps.max_groups[1] || l.groups[2] > caps.max_groups[2])
    throw Unsupported(str("[", ctx.op->name, "] grid beyond the device's workgroup count"));
  launch(ctx, std::move(l));
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
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(MatMul, vulkan, kF32 | kF16, matmul_vulkan, matmul_supports)
PORTA_REGISTER_KERNEL_IF(Gemm, vulkan, kF32 | kF16, gemm_vulkan, matmul_supports)

}  // namespace porta::vk
