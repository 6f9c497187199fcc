// GatherElements, GatherND, ScatterElements, ScatterND on vulkan. As for Gather, the indices
// are read (from the session's host copy where it has one) and checked on the host (an index out of range is a ShapeError, never an
// out-of-bounds access) and turned into int32 plans (ops/gather_util.hpp):
//  - the gathers become rows of `slice` elements moved by gather.comp (raw bits, every dtype);
//  - the scatters copy the data into the output, then scatter.comp applies the updates grouped
//    by target row: for reduction none, only the last update of each target (the cpu's "last
//    one wins", deterministic); for add/mul/max/min, one invocation per (target, slice element)
//    folds its group's updates in index order, no atomics. A group longer than the driver's
//    loop cap (vk::loop_limit) is folded over several dispatches, chunk by chunk.
#include <algorithm>

#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/movement.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"

namespace porta::vk {
namespace {

using opdef::ScatterReduction;

// Input 1's indices on the host: the session's host copy where it has one, else read back
// (which waits for the device).
std::vector<int64_t> indices_on_host(const KernelContext& ctx) { return opdef::host_index_values(ctx.on_host(1)); }

Tensor int32_on_device(const KernelContext& ctx, const std::vector<int64_t>& v) {
  std::vector<int32_t> w(v.begin(), v.end());  // < 2^31: fits_bindings bounds element counts
  return Tensor::from_host(w.data(), {static_cast<int64_t>(w.size())}, DType::i32, ctx.device);
}

// y row i <- data row rows[i] (rows of `slice` elements), with gather.comp over one outer row.
void gather_rows(const KernelContext& ctx, const Tensor& data, Tensor& y, const std::vector<int64_t>& rows,
                 int64_t slice) {
  int64_t n = y.numel();
  if (n == 0) return;
  Tensor dev_rows = int32_on_device(ctx, rows);
  size_t es = dtype_size(y.dtype());
  Launch l;
  l.shader = "gather";
  l.variant = es == 8 ? "b64" : es == 2 ? "b16" : es == 1 ? "b8" : "b32";
  l.args = {input(data), input(dev_rows), output(y)};
  l.push_u(n);
  l.push_u(slice);
  l.push_u(rows.size());
  l.push_u(data.numel() / slice);
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

void gather_elements_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "GatherElements");
  std::vector<int64_t> offsets =
      opdef::element_offsets("GatherElements", x.shape(), ind.shape(), axis, indices_on_host(ctx));
  gather_rows(ctx, x, ctx.out(0), offsets, 1);
}

void gather_nd_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  opdef::NdPlan plan =
      opdef::nd_plan("GatherND", x.shape(), ind.shape(), ctx.attrs->get_int("batch_dims"), indices_on_host(ctx));
  gather_rows(ctx, x, ctx.out(0), plan.rows, plan.slice);
}

std::string gather_family_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  DType it = ctx.in(1).dtype();
  if (it != DType::i64 && it != DType::i32) return str("indices of dtype ", dtype_name(it));
  return fits_bindings(ctx);
}

// y = data, then update row u (op)= into y's row target[u].
void scatter_rows(const KernelContext& ctx, const Tensor& data, const Tensor& upd, Tensor& y,
                  const std::vector<int64_t>& target, int64_t slice, ScatterReduction r) {
  if (y.numel() == 0) return;
  CopyPlan copy;
  copy.axis(y.numel(), 1, 1);
  run_copy(ctx, data, y, copy);
  if (target.empty() || slice == 0) return;
  bool last_wins = r == ScatterReduction::none;
  opdef::ScatterGroups g = opdef::scatter_groups(target, y.numel() / slice, last_wins);
  Tensor order = int32_on_device(ctx, g.order), targets = int32_on_device(ctx, g.group_target);
  Tensor starts = last_wins ? order : int32_on_device(ctx, g.starts);  // unused by mode 0
  int64_t n = static_cast<int64_t>(g.group_target.size()) * slice;
  // The fold loop runs at most `chunk` iterations (plus the one that leaves it) per dispatch.
  uint64_t limit = loop_limit(ctx);
  int64_t chunk = g.max_group;
  if (limit != UINT64_MAX) chunk = std::max<int64_t>(1, std::min<int64_t>(chunk, static_cast<int64_t>(limit) - 1));
  for (int64_t begin = 0; begin < g.max_group; begin += chunk) {
    Launch l;
    l.shader = "scatter";
    l.variant = numeric_variant(y.dtype());
    l.args = {input(upd), input(order), input(starts), input(targets), output(y)};
    l.push_u(n);
    l.push_u(slice);
    l.push_u(static_cast<uint32_t>(r));
    l.push_u(begin);
    l.push_u(chunk);
    set_grid(l, device_caps(ctx), (n + 255) / 256);
    launch(ctx, std::move(l));
  }
}

void scatter_elements_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "ScatterElements");
  ScatterReduction r = opdef::scatter_reduction(*ctx.attrs, "ScatterElements");
  std::vector<int64_t> offsets =
      opdef::element_offsets("ScatterElements", x.shape(), ind.shape(), axis, indices_on_host(ctx));
  scatter_rows(ctx, x, upd, ctx.out(0), offsets, 1, r);
}

void scatter_nd_vulkan(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2);
  ScatterReduction r = opdef::scatter_reduction(*ctx.attrs, "ScatterND");
  opdef::NdPlan plan = opdef::nd_plan("ScatterND", x.shape(), ind.shape(), 0, indices_on_host(ctx));
  scatter_rows(ctx, x, upd, ctx.out(0), plan.rows, plan.slice, r);
}

std::string scatter_supports(const KernelContext& ctx) {
  if (auto why = numeric_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  DType it = ctx.in(1).dtype();
  if (it != DType::i64 && it != DType::i32) return str("indices of dtype ", dtype_name(it));
  // Long groups of duplicate targets are split over dispatches; one update each must fit.
  if (auto why = loop_budget_ok(ctx, 2, "one update per dispatch"); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(GatherElements, vulkan, kAllTypes, gather_elements_vulkan, gather_family_supports)
PORTA_REGISTER_KERNEL(GatherND, vulkan, kAllTypes, gather_nd_vulkan, gather_family_supports)
PORTA_REGISTER_KERNEL(ScatterElements, vulkan, kF32 | kF16 | kI32 | kI64 | kI8 | kU8, scatter_elements_vulkan,
                         scatter_supports)
PORTA_REGISTER_KERNEL(ScatterND, vulkan, kF32 | kF16 | kI32 | kI64 | kI8 | kU8, scatter_nd_vulkan,
                         scatter_supports)

}  // namespace porta::vk
