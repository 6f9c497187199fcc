// LayerNormalization, InstanceNormalization (norm.comp) and inference BatchNormalization
// (batchnorm.comp) on vulkan. Statistics are fp32 whatever the storage dtype.
// norm.comp runs a whole row in one workgroup, so rows whose loops exceed the driver's cap on
// loop iterations per invocation (vk_kernel.hpp's loop_limit) decline; batchnorm.comp has no loop.
#include <algorithm>
#include <limits>

#include "kernels/vulkan/movement.hpp"
#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::vk {
namespace {

// Upper bound of the loop iterations of one norm.comp invocation for rows of R elements
// (vk_kernel.hpp's count: a loop costs its iterations plus one, a barrier one): three passes
// over the row by a workgroup of 256 (sum, squared deviations, output) and two
// workgroup_sums of reduce.glsl (subgroup arithmetic: a loop over the 256 / subgroup-size
// subgroups and three barriers; the shared-memory tree: 8 steps with a barrier each and three
// barriers, 20):
//   3 * (ceil(R / 256) + 1) + 2 * W     (W = 256 / subgroup + 4, 36 on lavapipe)
// On lavapipe (cap 65535, 57344 after the margin) rows up to 4,886,784 elements fit.
uint64_t norm_loops(const KernelContext& ctx, int64_t R) {
  uint64_t pass = (static_cast<uint64_t>(R) + 255) / 256 + 1;
  uint64_t w = reduction_strategy(ctx) == 0 ? 20 : 256 / std::max<uint64_t>(device_caps(ctx).subgroup_size, 1) + 4;
  return 3 * pass + 2 * w;
}

void run_norm(KernelContext& ctx, int64_t rows, int64_t R, int64_t C, bool channel_affine,
              const Tensor& scale, const Tensor* bias, bool stats) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (x.numel() == 0) return;
  Launch l;
  l.shader = "norm";
  l.variant = variant_for(x.dtype());
  l.spec = {channel_affine ? 1 : 0, reduction_strategy(ctx), stats ? 1 : 0};
  // Without statistics the mean/inv_std bindings are never written; y stands in for them.
  const Tensor& mean = stats ? ctx.out(1) : y;
  const Tensor& inv_std = stats ? ctx.out(2) : y;
  l.args = {input(x), input(scale), input(bias ? *bias : scale), output(y), output(mean), output(inv_std)};
  l.push_u(rows);
  l.push_u(R);
  l.push_u(C);
  l.push_f(ctx.attrs->get_float("epsilon", 1e-5));
  l.push_u(bias ? 1 : 0);
  set_grid(l, device_caps(ctx), rows);
  launch(ctx, std::move(l));
}

bool wants(const KernelContext& ctx, size_t i) { return ctx.outputs.size() > i && ctx.outputs[i].defined(); }

void layer_norm_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int r = x.rank();
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), r, "LayerNormalization");
  int64_t R = 1;
  for (int i = static_cast<int>(axis); i < r; ++i) R *= x.shape()[i];
  int64_t rows = R ? x.numel() / R : 0;
  bool stats = wants(ctx, 1) && wants(ctx, 2);
  // Scale/bias that broadcast over the normalised axes are expanded to full size on the
  // device first (small: one row of R elements).
  Shape normalised(x.shape().begin() + axis, x.shape().end());
  auto full = [&](const Tensor& t) { return t.numel() == R ? t : t.expand(normalised).contiguous(); };
  Tensor scale = full(ctx.in(1)), bias = ctx.has_input(2) ? full(ctx.in(2)) : Tensor();
  run_norm(ctx, rows, R, 1, false, scale, bias.defined() ? &bias : nullptr, stats);
  if (R == 0)  // statistics of nothing are 0/0 (the rows of Y are empty; Mean/InvStdDev are not)
    for (size_t k = 1; k < 3; ++k)
      if (wants(ctx, k) && ctx.out(k).numel())
        run_fill(ctx, ctx.out(k), std::numeric_limits<double>::quiet_NaN());
}

std::string layer_norm_supports(const KernelContext& ctx) {
  if (auto why = reductions_ok(ctx); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  const Tensor& x = ctx.in(0);
  int64_t R = x.numel();  // with a bad axis the kernel raises inference's error
  try {
    const opdef::AxisSplit g = opdef::split_at_axis_attr(ctx);
    R = g.n * g.inner;
  } catch (const ShapeError&) {
  }
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.in(i).dtype() != x.dtype()) return "scale/bias of a dtype other than the input's";
  if (ctx.outputs.size() > 1 && ctx.outputs.size() < 3) return "only one of Mean/InvStdDev requested";
  if (auto why = loop_budget_ok(ctx, norm_loops(ctx, R), str("a row of ", R, " elements")); !why.empty()) return why;
  for (size_t i = 1; i < ctx.outputs.size(); ++i)
    if (ctx.outputs[i].defined() && ctx.outputs[i].dtype() != x.dtype())
      return "Mean/InvStdDev in a dtype other than the input's";
  return fits_bindings(ctx);
}

// ---- "rows": one invocation per row, read as texels (CPU-like devices: layer_norm_rows.comp) --

void layer_norm_rows_vulkan(KernelContext& ctx) {
  // Mean/InvStdDev asked for (an eager call's supports cannot see its outputs yet): the
  // workgroup kernel writes them.
  if (wants(ctx, 1) || wants(ctx, 2)) return layer_norm_vulkan(ctx);
  const Tensor& x = ctx.in(0);
  if (x.numel() == 0) return;
  int r = x.rank();
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), r, "LayerNormalization");
  Shape normalised(x.shape().begin() + axis, x.shape().end());
  int64_t R = shape_numel(normalised), rows = x.numel() / R;
  auto full = [&](const Tensor& t) { return t.numel() == R ? t : t.expand(normalised).contiguous(); };
  Tensor scale = full(ctx.in(1)), bias = ctx.has_input(2) ? full(ctx.in(2)) : scale;
  Launch l;
  l.shader = "layer_norm_rows";
  l.variant = variant_for(x.dtype());
  l.local_size = 64;
  l.args = {texels(x), texels(scale), texels(bias), output(ctx.out(0))};
  l.push_u(rows);
  l.push_u(R / 4);
  l.push_f(ctx.attrs->get_float("epsilon", 1e-5));
  l.push_u(ctx.has_input(2) ? 1 : 0);
  set_grid(l, device_caps(ctx), (rows + 63) / 64);
  launch(ctx, std::move(l));
}

std::string layer_norm_rows_supports(const KernelContext& ctx) {
  const DeviceCaps& caps = device_caps(ctx);
  const Tensor& x = ctx.in(0);
  DType t = x.dtype();
  if (auto why = float_texels_ok(ctx, t, "a workgroup per row"); !why.empty()) return why;
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.in(i).dtype() != t) return "scale/bias of a dtype other than the input's";
  // With Mean/InvStdDev the kernel hands the call to the workgroup kernel, whose limits apply.
  if (ctx.outputs.size() > 1 && (ctx.outputs[1].defined() || (ctx.outputs.size() > 2 && ctx.outputs[2].defined())))
    if (auto why = layer_norm_supports(ctx); !why.empty()) return why;
  int64_t R = 0;
  try {
    const opdef::AxisSplit g = opdef::split_at_axis_attr(ctx);
    R = g.n * g.inner;
  } catch (const ShapeError&) {
    return fits_bindings(ctx);  // the kernel raises inference's error
  }
  if (R == 0 || R % 4) return str("rows of ", R, " elements (texels of 4 need a positive multiple of 4)");
  if (static_cast<uint64_t>(x.numel() / 4) > caps.max_texels)
    return "the input has more texels than the device's maxTexelBufferElements";
  if (auto why = loop_budget_ok(ctx, 3 * (static_cast<uint64_t>(R) / 4 + 1), str("a row of ", R, " elements")); !why.empty())
    return why;
  return fits_bindings(ctx);
}

void instance_norm_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t C = x.rank() > 1 ? x.shape()[1] : 1;
  int64_t R = 1;
  for (int i = 2; i < x.rank(); ++i) R *= x.shape()[i];
  int64_t rows = x.rank() > 1 ? x.shape()[0] * C : 0;
  run_norm(ctx, rows, R, C, true, ctx.in(1), &ctx.in(2), false);
}

std::string instance_norm_supports(const KernelContext& ctx) {
  if (auto why = reductions_ok(ctx); !why.empty()) return why;
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (ctx.in(0).rank() < 3) return "input of rank below 3";
  int64_t R = 1;
  for (int i = 2; i < ctx.in(0).rank(); ++i) R *= ctx.in(0).shape()[i];
  if (auto why = loop_budget_ok(ctx, norm_loops(ctx, R), str("a channel of ", R, " elements")); !why.empty()) return why;
  return fits_bindings(ctx);
}

// The activation graph fusion folded into a BatchNormalization (none: ACT 0).
void push_activation(Launch& l, const KernelContext& ctx) {
  const Epilogue e = epilogue_of(ctx);
  l.spec.insert(l.spec.begin(), e.act);
  l.push_f(e.alpha);
  l.push_f(e.beta);
}

int64_t spatial_of(const Tensor& x) {
  int64_t spatial = 1;
  for (int i = 2; i < x.rank(); ++i) spatial *= x.shape()[i];
  return spatial;
}

void batch_norm_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t n = x.numel();
  if (n == 0) return;
  int64_t C = x.rank() > 1 ? x.shape()[1] : 1, spatial = spatial_of(x);
  Launch l;
  l.shader = "batchnorm";
  l.variant = variant_for(x.dtype());
  l.args = {input(x), input(ctx.in(1)), input(ctx.in(2)), input(ctx.in(3)), input(ctx.in(4)), output(y)};
  l.push_u(n);
  l.push_u(C);
  l.push_u(spatial);
  l.push_f(ctx.attrs->get_float("epsilon", 1e-5));
  push_activation(l, ctx);
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

// "texel" with `porta_concat` parts (runtime/session_plan.hpp's concat_into_batch_norm: X's
// parts are input 0 and inputs 5.., a channel Concat's inputs): up to 8 parts per dispatch of
// batchnorm_parts_texel.comp, each straight into its channels of Y.
constexpr size_t kBatchNormParts = 8;

void batch_norm_parts_vulkan(KernelContext& ctx, int64_t parts) {
  Tensor& y = ctx.out(0);
  const int64_t n = y.dim(0), c = y.dim(1), spatial = spatial_of(y);
  std::vector<const Tensor*> src;
  std::vector<int64_t> begin;  // each part's first channel
  int64_t at = 0;
  for (int64_t i = 0; i < parts; ++i) {
    const Tensor& x = ctx.in(i == 0 ? 0 : static_cast<size_t>(i) + 4);
    bool fits = x.dtype() == y.dtype() && x.rank() == y.rank() && x.dim(0) == n;
    for (int d = 2; fits && d < y.rank(); ++d) fits = x.dim(d) == y.dim(d);
    if (!fits)
      throw BackendError(str("[BatchNormalization] internal: part ", i, " of X ", shape_str(x.shape()),
                             " does not fit Y ", shape_str(y.shape())));
    src.push_back(&x);
    begin.push_back(at);
    at += x.dim(1);
  }
  if (at != c) throw BackendError(str("[BatchNormalization] internal: X's parts have ", at, " channels, Y ", c));
  if (y.numel() == 0) return;
  const int64_t sq = spatial / 4, row_quads = c * sq;
  for (size_t g = 0; g < src.size(); g += kBatchNormParts) {
    const size_t count = std::min(kBatchNormParts, src.size() - g);
    Launch l;
    l.shader = "batchnorm_parts_texel";
    l.variant = variant_for(y.dtype());
    l.local_size = 64;
    uint32_t ends[kBatchNormParts] = {}, quads[kBatchNormParts] = {};
    int64_t end = 0;
    for (size_t k = 0; k < kBatchNormParts; ++k) {
      const Tensor& part = *src[g + std::min(k, count - 1)];
      l.args.push_back(texels(part));
      if (k < count) end += part.dim(1) * sq;
      ends[k] = static_cast<uint32_t>(end);
      quads[k] = static_cast<uint32_t>(part.dim(1) * sq);
    }
    for (size_t i = 1; i < 5; ++i) l.args.push_back(input(ctx.in(i)));
    l.args.push_back(output(y));
    const uint64_t total = static_cast<uint64_t>(n * end);
    if (total == 0) continue;
    l.push_u(total);
    l.push_u(end);
    l.push_u(row_quads);
    l.push_u(begin[g] * sq);
    l.push_u(sq);
    l.push_f(ctx.attrs->get_float("epsilon", 1e-5));
    push_activation(l, ctx);
    for (uint32_t v : ends) l.push_u(v);
    for (uint32_t v : quads) l.push_u(v);
    l.spec.push_back(static_cast<uint64_t>(n * row_quads) < kDiv21Bound ? 1 : 0);
    set_grid(l, device_caps(ctx), (total + 63) / 64);
    launch(ctx, std::move(l));
  }
}

// "texel": CPU-like devices, 4 elements of a channel per invocation.
void batch_norm_texel_vulkan(KernelContext& ctx) {
  if (const int64_t parts = ctx.attrs->get_int("porta_concat", 1); parts > 1) return batch_norm_parts_vulkan(ctx, parts);
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const uint64_t quads = static_cast<uint64_t>(x.numel() / 4);
  if (quads == 0) return;
  Launch l;
  l.shader = "batchnorm_texel";
  l.variant = variant_for(x.dtype());
  l.local_size = 64;
  l.args = {texels(x), input(ctx.in(1)), input(ctx.in(2)), input(ctx.in(3)), input(ctx.in(4)), output(y)};
  l.push_u(quads);
  l.push_u(x.shape()[1]);
  l.push_u(spatial_of(x) / 4);
  l.push_f(ctx.attrs->get_float("epsilon", 1e-5));
  push_activation(l, ctx);
  l.spec.push_back(quads < kDiv21Bound ? 1 : 0);
  set_grid(l, device_caps(ctx), (quads + 63) / 64);
  launch(ctx, std::move(l));
}

std::string batch_norm_supports(const KernelContext& ctx) {
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (ctx.attrs->get_int("training_mode", 0) != 0) return "training mode";
  for (size_t i = 1; i < 5; ++i)
    if (ctx.in(i).dtype() != ctx.in(0).dtype()) return "statistics in another dtype";
  return fits_bindings(ctx);
}

std::string batch_norm_texel_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = float_texels_ok(ctx, x.dtype(), "the per-element kernel"); !why.empty()) return why;
  if (x.rank() < 3 || spatial_of(x) % 4) return "spatial size not a multiple of 4";
  if (static_cast<uint64_t>(x.numel() / 4) > device_caps(ctx).max_texels) return "more texels than maxTexelBufferElements";
  return batch_norm_supports(ctx);
}

// Both implementations apply every activation of ops/fused_activation.hpp (activation.glsl);
// "texel" also reads a channel Concat's inputs as the parts of X (`porta_concat`).
KernelDef batch_norm_kernel(KernelFn fn, SupportsFn supports, KernelImpl impl, bool parts) {
  std::vector<std::string> fused = fused_activation_list();
  if (parts) fused.push_back("porta_concat");
  return kernel_applying("BatchNormalization", kF32 | kF16, std::move(fn), std::move(supports), std::move(impl),
                         std::move(fused));
}

const bool batch_norm_registered[] = {
    register_kernel_at_load(batch_norm_kernel(batch_norm_texel_vulkan, batch_norm_texel_supports, {"texel", 1}, true)),
    register_kernel_at_load(batch_norm_kernel(batch_norm_vulkan, batch_norm_supports, {"elements", 0}, false))};

}  // namespace

PORTA_REGISTER_KERNEL(LayerNormalization, vulkan, kF32 | kF16, layer_norm_rows_vulkan, layer_norm_rows_supports,
                      (::porta::KernelImpl{"rows", 10}))
PORTA_REGISTER_KERNEL(LayerNormalization, vulkan, kF32 | kF16, layer_norm_vulkan, layer_norm_supports)
PORTA_REGISTER_KERNEL(InstanceNormalization, vulkan, kF32 | kF16, instance_norm_vulkan, instance_norm_supports)

}  // namespace porta::vk
