// Reduce* and ArgMax/ArgMin on vulkan: reduce.comp (floats) or reduce_int.comp (integers, int64
// accumulation) over the input viewed as [outer, R, inner].
// When the reduced axes are not adjacent, the input is first permuted (copy.comp) so that they
// are. Axes come from the `axes` input (opset 13 ReduceSum, opset 18 others) or attribute;
// none means all axes unless noop_with_empty_axes.
#include <algorithm>

#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/movement.hpp"
#include "ops/reduce_util.hpp"

namespace porta::vk {
namespace {

enum ReduceOp : int { kSum = 0, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSum, kLogSumExp,
                      kArgMax, kArgMin };

std::vector<int64_t> reduced_axes(const KernelContext& ctx, bool& noop) {
  int r = ctx.in(0).rank();
  std::vector<int64_t> axes;
  bool given = false;
  if (ctx.has_input(1)) {
    for (double a : ctx.in(1).to_doubles()) axes.push_back(static_cast<int64_t>(a));
    given = true;
  } else if (ctx.attrs->has("axes")) {
    axes = ctx.attrs->get_ints("axes");
    given = true;
  } else if (ctx.attrs->has("axis")) {
    axes = {ctx.attrs->get_int("axis")};
    given = true;
  }
  noop = false;
  if (axes.empty()) {
    if (given && ctx.attrs->get_int("noop_with_empty_axes", 0) != 0) {
      noop = true;
      return {};
    }
    for (int i = 0; i < r; ++i) axes.push_back(i);
  }
  for (auto& a : axes) {
    if (a < -r || a >= r) throw ShapeError(str("[", ctx.op->name, "] axis ", a, " out of range for rank ", r));
    if (a < 0) a += r;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

void reduce_vulkan(KernelContext& ctx, int op) {
  Tensor x = ctx.in(0);
  Tensor& y = ctx.out(0);
  bool noop = false;
  std::vector<int64_t> axes = reduced_axes(ctx, noop);
  if (noop) {
    if (y.numel()) y.copy_(x.reshape(y.shape()));
    return;
  }
  bool integer = is_integer(x.dtype());
  if (integer) {
    // The cpu kernels' checks, so an integer reduction fails the same way on both (a float
    // one has NaN or +-inf to give). Max, Min, ArgMax and ArgMin all need a non-empty reduced
    // axis: `max` stands for them.
    opdef::ReduceKind kind = op == kSum ? opdef::ReduceKind::sum : op == kMean ? opdef::ReduceKind::mean
                                                                                 : opdef::ReduceKind::max;
    opdef::check_reduce_nonempty(kind, x.shape(), axes, y.numel(), ctx.op->name);
    opdef::check_integer_mean_nonempty(kind, x.dtype(), x.shape(), ctx.op->name);
  }
  if (y.numel() == 0) return;
  int r = x.rank();
  bool adjacent = axes.empty() || axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  int64_t outer = 1, R = 1, inner = 1;
  if (adjacent && !axes.empty()) {
    for (int i = 0; i < r; ++i) {
      int64_t d = x.shape()[i];
      if (i < axes.front()) outer *= d;
      else if (i <= axes.back()) R *= d;
      else inner *= d;
    }
  } else {
    // Move kept axes first, reduced axes last: [kept..., reduced...] with inner = 1.
    std::vector<int64_t> order;
    for (int i = 0; i < r; ++i)
      if (!std::binary_search(axes.begin(), axes.end(), i)) order.push_back(i);
    for (int64_t a : axes) order.push_back(a);
    Shape ps;
    for (int64_t a : order) ps.push_back(x.shape()[a]);
    Tensor permuted = Tensor::empty(ps, x.dtype(), ctx.device);
    std::vector<int64_t> xs = strides_of(x.shape()), pstr = strides_of(ps);
    CopyPlan plan;
    for (int i = 0; i < r; ++i) plan.axis(ps[i], xs[order[i]], pstr[i]);
    run_copy(ctx, x, permuted, plan);
    for (int i = 0; i < r; ++i) (i < r - static_cast<int>(axes.size()) ? outer : R) *= ps[i];
    x = permuted;
  }
  int64_t rows = outer * inner;
  Launch l;
  l.shader = integer ? "reduce_int" : "reduce";
  l.variant = numeric_variant(x.dtype());  // f32, f16, i32, i64, i8, u8: what supports() admits
  l.spec = {op, reduction_strategy(ctx), ctx.attrs->get_int("select_last_index", 0) ? 1 : 0};
  l.args = {input(x), output(y), output(y)};
  l.push_u(rows);
  l.push_u(R);
  l.push_u(inner);
  set_grid(l, device_caps(ctx), rows);
  launch(ctx, std::move(l));
}

template <int Op>
void reduce_op_vulkan(KernelContext& ctx) { reduce_vulkan(ctx, Op); }

std::string reduce_supports(const KernelContext& ctx) {
  DType t = ctx.in(0).dtype();
  if (is_integer(t)) {  // reduce_int.comp
    if (!device_caps(ctx).int64_arithmetic)
      return "integer reductions accumulate in int64 and the device has no shaderInt64";
    if (auto why = numeric_ok(ctx, t); !why.empty()) return why;
  } else {  // reduce.comp
    if (auto why = reductions_ok(ctx); !why.empty()) return why;
    if (auto why = fp16_ok(ctx, t); !why.empty()) return why;
  }
  if (auto why = rank_ok(ctx.in(0).rank()); !why.empty()) return why;
  return fits_bindings(ctx);
}

}  // namespace

constexpr DTypeSet kReduceTypes = kF32 | kF16 | kI32 | kI64;
constexpr DTypeSet kArgTypes = kReduceTypes | kI8 | kU8;

PORTA_REGISTER_KERNEL_IF(ReduceSum, vulkan, kReduceTypes, reduce_op_vulkan<kSum>, reduce_supports)
PORTA_REGISTER_KERNEL_IF(ReduceMean, vulkan, kReduceTypes, reduce_op_vulkan<kMean>, reduce_supports)
PORTA_REGISTER_KERNEL_IF(ReduceMax, vulkan, kReduceTypes, reduce_op_vulkan<kMax>, reduce_supports)
PORTA_REGISTER_KERNEL_IF(ReduceMin, vulkan, kReduceTypes, reduce_op_vulkan<kMin>, reduce_supports)
// reduce.comp also implements Prod, SumSquare, L1, L2, LogSum and LogSumExp (OP 4-9); they are
// registered once those ops have definitions (a kernel needs a schema to be tested against).
PORTA_REGISTER_KERNEL_IF(ArgMax, vulkan, kArgTypes, reduce_op_vulkan<kArgMax>, reduce_supports)
PORTA_REGISTER_KERNEL_IF(ArgMin, vulkan, kArgTypes, reduce_op_vulkan<kArgMin>, reduce_supports)

}  // namespace porta::vk
