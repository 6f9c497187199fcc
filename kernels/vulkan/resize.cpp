// Resize on vulkan: the host plan (ops/resize_util.hpp: per-axis source offsets and weights,
// computed in double exactly as the reference does, adjacent untouched axes merged) goes to
// the device as two small tables, and resize.comp sums each output element's taps. Reading
// the scales input (when given; sizes are in the output shape) copies it to the host.
#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/resize_util.hpp"

namespace porta::vk {
namespace {

void resize_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::ResizePlan p = opdef::resize_plan(ctx);
  const int rank = static_cast<int>(p.axes.size());
  if (rank > kMaxRank)
    throw Unsupported(str("[Resize] vulkan kernel expected at most ", kMaxRank, " axes after merging, got ", rank));
  std::vector<int32_t> index(p.index.begin(), p.index.end());
  std::vector<float> weight(p.weight.begin(), p.weight.end());
  if (index.empty()) {  // every axis untouched: bind a one-entry table nothing reads
    index.push_back(0);
    weight.push_back(0.0f);
  }
  const int64_t entries = static_cast<int64_t>(index.size());
  Tensor dev_index = Tensor::from_host(index.data(), {entries}, DType::i32, ctx.device);
  Tensor dev_weight = Tensor::from_host(weight.data(), {entries}, DType::f32, ctx.device);
  Launch l;
  l.shader = "resize";
  l.variant = variant_for(x.dtype());
  l.args = {input(x), input(dev_index), input(dev_weight), output(y)};
  l.push_u(static_cast<uint64_t>(y.numel()));
  l.push_i(rank);
  l.push_u(static_cast<uint64_t>(p.combos));
  l.push_f(p.extrapolation);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].out : 1);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].in_stride : 0);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].taps : 0);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].table_offset : 0);
  set_grid(l, device_caps(ctx), (static_cast<uint64_t>(y.numel()) + 255) / 256);
  launch(ctx, std::move(l));
}

std::string resize_supports(const KernelContext& ctx) {
  const int rank = ctx.in(0).rank();
  if (rank > kMaxRank) return str("rank ", rank, " is above the shader's ", kMaxRank);
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  // Loop iterations of one invocation, at most: the coordinate loop, then every combination
  // of taps (nearest 1, linear 2, cubic 4 per resized axis) with its axis loop.
  std::string mode = ctx.attrs->get_string("mode", "nearest");
  uint64_t taps = mode == "cubic" ? 4 : mode == "linear" ? 2 : 1, combos = 1;
  for (int k = 0; k < rank; ++k) combos *= taps;
  uint64_t iterations = static_cast<uint64_t>(rank + 1) + combos * static_cast<uint64_t>(rank + 2) + 1;
  if (auto why = loop_budget_ok(ctx, iterations, "the taps of " + mode + " interpolation"); !why.empty())
    return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Resize, vulkan, kF32 | kF16, resize_vulkan, resize_supports)

}  // namespace porta::vk
