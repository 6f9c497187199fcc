// Pad on vulkan. Constant mode: fill.comp writes the constant everywhere, then copy.comp
// places the (possibly cropped, for negative pads) input inside. Edge and reflect: pad.comp.
#include <cstring>

#include "kernels/vulkan/movement.hpp"
#include "ops/shape_util.hpp"

namespace porta::vk {
namespace {

void pad_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int r = x.rank();
  // Begins then ends, one per axis (inference checked the count and rejects an axes input).
  std::vector<int64_t> pads = opdef::tensor_ints(ctx.in(1));
  std::vector<int64_t> before(pads.begin(), pads.begin() + r), after(pads.begin() + r, pads.end());
  std::string mode = ctx.attrs->get_string("mode", "constant");
  if (mode != "constant") {
    if (y.numel() == 0) return;
    for (int i = 0; i < r; ++i)
      if (x.shape()[i] == 0) throw ShapeError(str("[Pad] ", mode, " mode cannot pad the empty axis ", i));
    Launch l;
    l.shader = "pad";
    size_t size = dtype_size(y.dtype());
    l.variant = size == 8 ? "b64" : size == 2 ? "b16" : size == 1 ? "b8" : "b32";
    l.spec = {mode == "edge" ? 1 : 2};
    l.args = {input(x), output(y)};
    l.push_u(y.numel());
    l.push_u(r);
    for (int k = 0; k < 3; ++k)
      for (int i = 0; i < kMaxRank; ++i) {
        if (i >= r) {
          l.push_i(k == 2 ? 0 : 1);
          continue;
        }
        l.push_i(k == 0 ? y.shape()[i] : k == 1 ? x.shape()[i] : before[i]);
      }
    set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
    launch(ctx, std::move(l));
    return;
  }
  uint64_t bits = 0;
  if (ctx.has_input(2) && ctx.in(2).numel() > 0) {
    Tensor v = ctx.on_host(2).contiguous();
    std::memcpy(&bits, v.raw_data(), dtype_size(v.dtype()));
  }
  run_fill_bits(ctx, y, bits);
  std::vector<int64_t> xs = strides_of(x.shape()), ys = strides_of(y.shape());
  CopyPlan plan;
  for (int i = 0; i < r; ++i) {
    int64_t skip = std::max<int64_t>(0, -before[i]), at = std::max<int64_t>(0, before[i]);
    int64_t count = x.shape()[i] - skip - std::max<int64_t>(0, -after[i]);
    if (count <= 0) return;  // everything cropped: only the constant remains
    plan.src_base += skip * xs[i];
    plan.dst_base += at * ys[i];
    plan.axis(count, xs[i], ys[i]);
  }
  run_copy(ctx, x, y, plan);
}

std::string pad_supports(const KernelContext& ctx) {
  std::string mode = ctx.attrs->get_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") return str("mode '", mode, "'");
  if (ctx.has_input(2) && ctx.in(2).dtype() != ctx.in(0).dtype()) return "constant_value has another dtype";
  return copy_supports(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Pad, vulkan, kAllTypes, pad_vulkan, pad_supports)

}  // namespace porta::vk
