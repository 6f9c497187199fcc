// Concat and Split on cpu: each input (output) is copied into (out of) its window of the other
// along the axis (ops/view_util.hpp).
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "ops/view_util.hpp"

namespace porta::cpu {

namespace {

// A channels-last tensor (N x C x spatial, stored N x spatial x C) seen as the plain
// N x pixels x C tensor its bytes are.
Tensor channels_last_storage(const Tensor& t) {
  int64_t n = t.dim(0), c = t.dim(1), pixels = n * c == 0 ? 0 : t.numel() / (n * c);
  if (!t.is_contiguous()) throw BackendError("[Concat] internal: a channels-last operand must be contiguous");
  return t.reshape({n, pixels, c});  // a view
}

// Concat / Split along the channel axis of rank 3-5 f32 tensors take them channels-last: the
// channel axis is then the last axis of the stored N x pixels x C tensors. All operands or none.
KernelDef::LayoutUse channel_axis_layout_use(const KernelContext& call, const Tensor& whole) {
  if (whole.dtype() != DType::f32 || whole.rank() < 3 || whole.rank() > 5) return {};
  int64_t axis = call.attrs->get_int("axis");
  if (axis != 1 && axis != 1 - whole.rank()) return {};
  uint64_t inputs = call.inputs.size() >= 64 ? 0 : (uint64_t{1} << call.inputs.size()) - 1;
  return {inputs, true, true};
}

}  // namespace

static void concat_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (activation_layout(*ctx.attrs).output) {
    Tensor ys = channels_last_storage(y);
    int64_t at = 0;
    for (const Tensor& x : ctx.inputs) {
      if (x.numel() > 0) copy_strided(channels_last_storage(x), ys.slice(2, at, at + x.dim(1)));
      at += x.dim(1);
    }
    return;
  }
  opdef::AxisParts p = opdef::concat_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.in(part.index).numel() > 0)
      copy_strided(ctx.in(part.index), y.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size));
}

static void split_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  opdef::AxisParts p = opdef::split_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.out(part.index).numel() > 0)
      copy_strided(x.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size), ctx.out(part.index));
}

namespace {
const bool concat_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "Concat";
  k.backend = DeviceType::cpu;
  k.dtypes = kAllTypes;
  k.fn = concat_cpu;
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = [](const KernelContext& call) { return channel_axis_layout_use(call, call.outputs.at(0)); };
  return k;
}());
}  // namespace
PORTA_REGISTER_KERNEL(Split, cpu, kAllTypes, split_cpu)

}  // namespace porta::cpu
