// porta cpu kernels — how a Conv call's activations are stored (conv_common.hpp).
#include "kernels/cpu/conv_common.hpp"
#include "kernels/cpu/dnn_layout.hpp"

namespace porta::cpu {

ConvLayouts conv_layouts(KernelContext& ctx) {
  const LayoutSides layout = activation_layout(*ctx.attrs);
  const auto last = [](const Tensor& t) { return channels_last_tag(t.shape()) != dnnl::memory::format_tag::undef; };
  ConvLayouts r;
  r.x_last = layout.input(0) && last(ctx.in(0));
  r.y_last = layout.output && last(ctx.out(0));
  r.r_last = ctx.has_input(3) && layout.input(3) && last(ctx.out(0));
  return r;
}

}  // namespace porta::cpu
