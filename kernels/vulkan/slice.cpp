// Slice on vulkan (opset 13: starts, ends, axes?, steps? as inputs): copy.comp reading the
// input at start + coordinate * step along each sliced axis (negative steps included). The
// output shape is already inferred; only starts and steps are needed here.
#include "kernels/vulkan/movement.hpp"

namespace porta::vk {
namespace {

std::vector<int64_t> host_ints(const Tensor& t) {
  std::vector<double> v = t.to_doubles();
  return std::vector<int64_t>(v.begin(), v.end());
}

void slice_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int r = x.rank();
  std::vector<int64_t> starts = host_ints(ctx.in(1));
  std::vector<int64_t> axes, steps;
  if (ctx.has_input(3)) axes = host_ints(ctx.in(3));
  else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (ctx.has_input(4)) steps = host_ints(ctx.in(4));
  else steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    throw ShapeError(str("[Slice] starts, axes and steps should have one entry per sliced axis, got ",
                         starts.size(), ", ", axes.size(), ", ", steps.size()));
  std::vector<int64_t> begin(r, 0), step(r, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r) throw ShapeError(str("[Slice] axis ", axes[i], " out of range for rank ", r));
    if (steps[i] == 0) throw ShapeError("[Slice] step 0 is not allowed");
    int64_t dim = x.shape()[a], s = starts[i];
    if (s < 0) s += dim;
    s = steps[i] > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    begin[a] = s;
    step[a] = steps[i];
  }
  std::vector<int64_t> xs = strides_of(x.shape()), ys = strides_of(y.shape());
  CopyPlan plan;
  for (int i = 0; i < r; ++i) {
    plan.src_base += begin[i] * xs[i];
    plan.axis(y.shape()[i], xs[i] * step[i], ys[i]);
  }
  run_copy(ctx, x, y, plan);
}

std::string slice_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (auto why = rank_ok(ctx.in(0).rank()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL_IF(Slice, vulkan, kAllTypes, slice_vulkan, slice_supports)

}  // namespace porta::vk
