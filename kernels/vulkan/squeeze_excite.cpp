// SqueezeExcite (ai.porta) on vulkan, f32 or f16 storage with fp32 arithmetic, "rows"
// (CPU-like devices): one or two dispatches where the block's export runs four
// (GlobalAveragePool, two 1x1 Convs, Mul):
// - squeeze_excite_gate.comp: one workgroup per image computes its channels' means, the hidden
//   layer and the gates; for images of at most kScaleInGate elements it writes Y = X * gate
//   itself, else the gates go to a scratch of N x C (fp32) for
// - squeeze_excite_scale.comp: Y = X * gate, per element or per vec4 texel, over the device.
// A workgroup per image reads the whole image alone and computes both products alone, so
// images of more than kMaxImage elements and products of more than kMaxProduct multiply-adds
// decline (the composite spreads them over the device: on lavapipe one workgroup runs on one
// thread, and past about 2^15 multiply-adds the two products there cost more than the two
// dispatches saved), as do blocks whose means and hidden values do not fit the device's shared
// memory. GPUs take the composite.
#include <algorithm>

#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/fused_activation.hpp"

namespace porta::vk {
namespace {

constexpr uint32_t kLocal = 64;
constexpr int64_t kMaxImage = int64_t{1} << 19;    // elements of one image (C x positions)
constexpr int64_t kMaxProduct = int64_t{1} << 15;  // multiply-adds of one product (R x C)
constexpr int64_t kScaleInGate = int64_t{1} << 15; // image elements the gate's workgroup scales

struct Block {
  int64_t N = 0, C = 0, R = 0, P = 0;
  bool vec4 = false, w1v = false, w2v = false, scale_in_gate = false;
  int64_t shared_c = 0, shared_r = 0;  // the shaders' shared arrays, multiples of 64

  explicit Block(const KernelContext& ctx) {
    const Tensor& x = ctx.in(0);
    N = x.dim(0), C = x.dim(1), R = ctx.in(1).dim(0);
    P = N * C == 0 ? 0 : x.numel() / (N * C);
    vec4 = P % 4 == 0 && x.offset() % 4 == 0 && static_cast<uint64_t>(x.numel() / 4) <= device_caps(ctx).max_texels;
    w1v = C % 4 == 0 && ctx.in(1).offset() % 4 == 0;
    w2v = R % 4 == 0 && ctx.in(3).offset() % 4 == 0;
    shared_c = std::max<int64_t>(1, (C + 63) / 64) * 64;
    shared_r = std::max<int64_t>(1, (R + 63) / 64) * 64;
    scale_in_gate = C * P <= kScaleInGate;
  }
  // Loop iterations of one gate invocation (vk_kernel.hpp's count).
  uint64_t gate_loops() const {
    auto turns = [](int64_t n) { return static_cast<uint64_t>((n + kLocal - 1) / kLocal); };
    const uint64_t plane = static_cast<uint64_t>(vec4 ? P / 4 : P) + 1;
    const uint64_t row1 = static_cast<uint64_t>(w1v ? C / 4 : C) + 1, row2 = static_cast<uint64_t>(w2v ? R / 4 : R) + 1;
    const uint64_t scale = scale_in_gate ? plane : 0;
    return turns(C) * (plane + 1) + 1 + turns(R) * (row1 + 1) + 1 + turns(C) * (row2 + scale + 1) + 1 + 2;
  }
};

void squeeze_excite_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const Block b(ctx);
  const opdef::FusedActivation act = opdef::parse_fused_activation(*ctx.attrs, "SqueezeExcite", "activation");
  const opdef::FusedActivation gate = opdef::parse_fused_activation(*ctx.attrs, "SqueezeExcite", "gate");
  const Tensor& w1 = ctx.in(1);
  const Tensor& w2 = ctx.in(3);
  // The gates' scratch (bound, unwritten, when the gate dispatch scales X itself).
  Tensor s = Tensor::empty({b.scale_in_gate ? 1 : b.N * b.C}, DType::f32, ctx.device);

  Launch g;
  g.shader = "squeeze_excite_gate";
  g.variant = variant_for(x.dtype());
  g.local_size = kLocal;
  g.spec = {static_cast<int32_t>(act.kind),  static_cast<int32_t>(gate.kind),       b.vec4 ? 1 : 0,
            b.w1v ? 1 : 0,                   b.w2v ? 1 : 0,                          static_cast<int32_t>(b.shared_c),
            static_cast<int32_t>(b.shared_r),       b.scale_in_gate ? 1 : 0};
  g.args = {b.vec4 ? texels(x) : scalar_texels(x), b.w1v ? texels(w1) : scalar_texels(w1),
            scalar_texels(ctx.has_input(2) ? ctx.in(2) : w1), b.w2v ? texels(w2) : scalar_texels(w2),
            scalar_texels(ctx.has_input(4) ? ctx.in(4) : w2), output(s), output(y)};
  for (int64_t v : {b.C, b.R, b.P}) g.push_u(static_cast<uint64_t>(v));
  g.push_u(ctx.has_input(2) ? 1 : 0);
  g.push_u(ctx.has_input(4) ? 1 : 0);
  for (double v : {act.alpha, act.beta, gate.alpha, gate.beta}) g.push_f(v);
  set_grid(g, device_caps(ctx), static_cast<uint64_t>(b.N));
  launch(ctx, std::move(g));
  if (b.scale_in_gate) return;

  Launch m;
  m.shader = "squeeze_excite_scale";
  m.variant = variant_for(x.dtype());
  m.local_size = 64;
  const uint64_t per = static_cast<uint64_t>(b.vec4 ? b.P / 4 : b.P);
  const uint64_t total = static_cast<uint64_t>(b.N * b.C) * per;
  m.spec = {b.vec4 ? 1 : 0, total < kDiv21Bound ? 1 : 0};
  m.args = {b.vec4 ? texels(x) : scalar_texels(x), input(s), output(y)};
  m.push_u(total);
  m.push_u(per);
  set_grid(m, device_caps(ctx), (total + 63) / 64);
  launch(ctx, std::move(m));
}

std::string squeeze_excite_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the composite (pooling spread over the device)"); !why.empty())
    return why;
  const Block b(ctx);
  if (b.C * b.P > kMaxImage)
    return str("an image of ", b.C, " x ", b.P, " elements (a workgroup per image reads at most ", kMaxImage, ")");
  if (b.R * b.C > kMaxProduct)
    return str("products of ", b.R, " x ", b.C, " multiply-adds per image (a workgroup per image computes at most ",
               kMaxProduct, ")");
  const uint64_t shared = static_cast<uint64_t>(b.shared_c + b.shared_r) * 4;
  if (shared > device_caps(ctx).shared_memory)
    return str(b.C, " channels and ", b.R, " hidden units need ", shared, " bytes of shared memory; the device has ",
               device_caps(ctx).shared_memory);
  if (!b.vec4)
    if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
  for (size_t i : {size_t{1}, size_t{2}, size_t{3}, size_t{4}})
    if (ctx.has_input(i))
      if (auto why = scalar_texels_ok(ctx, ctx.in(i)); !why.empty()) return why;
  if (auto why = loop_budget_ok(ctx, b.gate_loops(), str(b.C, " channels of ", b.P, " positions, ", b.R, " hidden units"));
      !why.empty())
    return why;
  if (auto why = grid_ok(ctx, static_cast<uint64_t>(b.N), "one workgroup per image"); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(SqueezeExcite, vulkan, kF32 | kF16, squeeze_excite_vulkan, squeeze_excite_supports,
                      (::porta::KernelImpl{"rows", 10}))

}  // namespace porta::vk
