// Reduce* and ArgMax/ArgMin on vulkan: reduce.comp (floats) or reduce_int.comp (integers, int64
// accumulation) over the input viewed as [outer, R, inner]; on CPU-like devices float
// ReduceSum/Mean/Max/Min over trailing axes first run global_pool_rows.comp ("rows", below).
// Loop cap (vk_kernel.hpp's loop_limit): a float row longer than one workgroup may reduce within
// the driver's loop iterations per invocation is cut into chunks reduced in a first dispatch and
// combined in further ones (reduce.comp's partials); integer rows that do not fit decline.
// When the reduced axes are not adjacent, the input is first permuted (copy.comp) so that they
// are. Axes come from the `axes` input (opset 13 ReduceSum, opset 18 others) or attribute;
// none means all axes unless noop_with_empty_axes.
#include <algorithm>

#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/movement.hpp"
#include "ops/common.hpp"
#include "ops/reduce_util.hpp"

namespace porta::vk {
namespace {

enum ReduceOp : int { kSum = 0, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSum, kLogSumExp,
                      kArgMax, kArgMin };

// The reduced axes, sorted. ArgMax/ArgMin (attribute "axis") reduce one axis, none for a
// scalar, which still goes through the kernel. The other reductions take ops/reduce_util.hpp's
// axes, where none means a copy (noop_with_empty_axes, or a scalar's reduction): `noop`.
std::vector<int64_t> reduced_axes(const KernelContext& ctx, bool& noop) {
  const int r = ctx.in(0).rank();
  if (ctx.attrs->has("axis")) {
    noop = false;
    int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), r, ctx.op->name);
    return r == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{axis};
  }
  std::vector<int64_t> axes = opdef::reduce_axes_of(ctx);
  noop = axes.empty();
  return axes;
}

constexpr uint64_t kLocalSize = 256;  // reduce.comp's and reduce_int.comp's workgroup size

uint64_t per_thread(uint64_t elements) { return (elements + kLocalSize - 1) / kLocalSize; }

// Upper bound of the loop iterations (vk_kernel.hpp's count: a loop costs its iterations plus
// one, a barrier one) of one workgroup_reduce of reduce.glsl: subgroup arithmetic runs one
// loop over the subgroups (invocation 0) and three barriers; the shared-memory tree runs
// log2(256) = 8 steps with a barrier each, plus three barriers.
uint64_t workgroup_reduce_loops(const KernelContext& ctx) {
  if (reduction_strategy(ctx) == 0) return 1 + (8 + 1) + 8 + 2;
  uint64_t subgroup = std::max<uint64_t>(device_caps(ctx).subgroup_size, 1);
  return (kLocalSize / subgroup + 1) + 3;
}

// reduce.comp: loop iterations of one invocation reducing a chunk of `chunk` elements of a row.
// Passes over the chunk: 2 for log-sum-exp (maximum, then the sum), else 1; workgroup
// reductions: one per pass, plus the NaN check of Max/Min; the arg reductions pass once and
// combine with their own tree (8 steps, a barrier each, one barrier before).
//   sum etc.:     (ceil(chunk/256) + 1) + W            (W: workgroup_reduce_loops, 36 on lavapipe)
//   max/min:      (ceil(chunk/256) + 1) + 2W
//   log-sum-exp: 2(ceil(chunk/256) + 1) + 2W
//   arg:          (ceil(chunk/256) + 1) + 18
uint64_t reduce_loops(const KernelContext& ctx, int op, uint64_t chunk) {
  uint64_t pass = per_thread(chunk) + 1;
  if (op >= kArgMax) return pass + 1 + (8 + 1) + 8;
  uint64_t w = workgroup_reduce_loops(ctx);
  if (op == kLogSumExp) return 2 * pass + 2 * w;
  if (op == kMax || op == kMin) return pass + 2 * w;
  return pass + w;
}

// Elements of a row one workgroup of reduce.comp reduces within the loop cap (whole chunks of
// 256 per invocation; 0 when not even 256 fit, and UINT64_MAX when the driver has no cap).
uint64_t reduce_chunk(const KernelContext& ctx, int op) {
  uint64_t limit = loop_limit(ctx);
  if (limit == UINT64_MAX) return UINT64_MAX;
  uint64_t fixed = reduce_loops(ctx, op, 0), passes = op == kLogSumExp ? 2 : 1;  // reduce_loops(0): per_thread 0
  if (limit < fixed + passes) return 0;
  return (limit - fixed) / passes * kLocalSize;
}

// reduce_int.comp: one pass over the row, then a shared-memory tree (8 steps, a barrier each,
// one barrier before): (ceil(R/256) + 1) + 18.
uint64_t reduce_int_loops(uint64_t R) { return per_thread(R) + 1 + 1 + (8 + 1) + 8; }

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
  if (integer) {
    l.args = {input(x), output(y), output(y)};
    l.push_u(rows);
    l.push_u(R);
    l.push_u(inner);
    set_grid(l, device_caps(ctx), rows);
    launch(ctx, std::move(l));
    return;
  }
  uint64_t chunk = reduce_chunk(ctx, op);
  if (chunk == 0) throw BackendError(str("[", ctx.op->name, "] no chunk fits the loop cap (supports should decline)"));
  // Passes while a row is longer than one chunk: each reduces chunks of the current rows to
  // fp32 partials ([rows, parts], inner 1 from then on); the last pass reduces whole rows.
  bool arg = op >= kArgMax;
  Tensor values = x, indices;  // what the pass reads: x, then the previous pass's partials
  bool partial_in = false;
  int64_t length = R, stride = inner;
  for (;;) {
    uint64_t parts = static_cast<uint64_t>(length) <= chunk ? 1 : (length + chunk - 1) / chunk;
    bool partial_out = parts > 1;
    Tensor part_values, part_indices;
    if (partial_out) {
      part_values = Tensor::empty({static_cast<int64_t>(rows * parts)}, DType::f32, ctx.device);
      if (arg) part_indices = Tensor::empty({static_cast<int64_t>(rows * parts)}, DType::i64, ctx.device);
    }
    Launch pass = l;
    const Tensor& out_index = partial_out ? (arg ? part_indices : part_values) : y;
    const Tensor& out_part = partial_out ? part_values : y;
    const Tensor& in_part = partial_in ? values : x;
    const Tensor& in_index = partial_in && arg ? indices : in_part;
    pass.args = {input(x), output(y), output(out_index), output(out_part), input(in_part),
                 input(in_index)};
    pass.push_u(rows);
    pass.push_u(length);
    pass.push_u(stride);
    pass.push_u(parts);
    pass.push_u(partial_out ? chunk : length);
    pass.push_u(R);
    pass.push_u((partial_out ? 1 : 0) | (partial_in ? 2 : 0));
    set_grid(pass, device_caps(ctx), rows * parts);
    launch(ctx, std::move(pass));
    if (!partial_out) return;
    values = part_values;
    indices = part_indices;
    partial_in = true;
    length = static_cast<int64_t>(parts);
    stride = 1;
  }
}

template <int Op>
void reduce_op_vulkan(KernelContext& ctx) { reduce_vulkan(ctx, Op); }

// Float rows of any length split into chunks (reduce_vulkan), so reduce.comp declines only
// when not even 256 elements per workgroup fit the cap; reduce_int.comp runs whole rows.
std::string reduce_loop_budget(const KernelContext& ctx) {
  int op = ctx.op->name == "ReduceSum"    ? kSum
           : ctx.op->name == "ReduceMean" ? kMean
           : ctx.op->name == "ReduceMax"  ? kMax
           : ctx.op->name == "ReduceMin"  ? kMin
           : ctx.op->name == "ArgMax"     ? kArgMax
           : ctx.op->name == "ArgMin"     ? kArgMin
                                          : kLogSumExp;  // the costliest of the rest
  if (!is_integer(ctx.in(0).dtype())) {
    if (reduce_chunk(ctx, op) > 0) return "";
    return loop_budget_ok(ctx, reduce_loops(ctx, op, kLocalSize), "a reduction of 256 elements per workgroup");
  }
  // The row length: input over output elements where the outputs are known (a session's
  // shape probe), else from the axes (an eager call's axes input holds its values).
  const Tensor& x = ctx.in(0);
  int64_t R = x.numel();
  if (!ctx.outputs.empty() && ctx.outputs[0].defined()) {
    if (ctx.outputs[0].numel() > 0) R = x.numel() / ctx.outputs[0].numel();
  } else {
    try {
      bool noop = false;
      std::vector<int64_t> axes = reduced_axes(ctx, noop);
      R = 1;
      if (!noop)
        for (int64_t a : axes) R *= x.shape()[a];
    } catch (const Error&) {
      R = x.numel();  // the whole tensor bounds any row
    }
  }
  return loop_budget_ok(ctx, reduce_int_loops(static_cast<uint64_t>(R)), str("an integer row of ", R, " elements"));
}

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
  if (auto why = reduce_loop_budget(ctx); !why.empty()) return why;
  if (auto why = rank_ok(ctx.in(0).rank()); !why.empty()) return why;
  return fits_bindings(ctx);
}

// ---- "rows": float ReduceSum/Mean/Max/Min over trailing axes on CPU-like devices -------------
// (global_pool_rows.comp: one invocation per row; a mean over the spatial axes is how PyTorch
// exports adaptive average pooling to 1x1 in MnasNet and ShuffleNet).

// The row length when the reduced axes are the trailing ones (after unit axes), else 0.
int64_t trailing_rows_length(const KernelContext& ctx) {
  bool noop = false;
  std::vector<int64_t> axes = reduced_axes(ctx, noop);
  const Tensor& x = ctx.in(0);
  if (noop || axes.empty()) return 0;
  const int r = x.rank();
  if (axes.back() - axes.front() + 1 != static_cast<int64_t>(axes.size())) return 0;
  for (int i = static_cast<int>(axes.back()) + 1; i < r; ++i)
    if (x.shape()[i] != 1) return 0;
  int64_t R = 1;
  for (int64_t a : axes) R *= x.shape()[a];
  return R;
}

template <int Op>
void reduce_rows_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const int64_t R = trailing_rows_length(ctx), rows = x.numel() / R;
  Launch l;
  l.shader = "global_pool_rows";
  l.variant = variant_for(x.dtype());
  l.spec = {Op == kMean ? 0 : Op == kMax ? 1 : Op == kSum ? 2 : 3};
  l.local_size = 64;
  l.args = {scalar_texels(x), output(y)};
  l.push_u(rows);
  l.push_u(R);
  set_grid(l, device_caps(ctx), (static_cast<uint64_t>(rows) + 63) / 64);
  launch(ctx, std::move(l));
}

std::string reduce_rows_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = cpu_like_ok(ctx, "a workgroup per row"); !why.empty()) return why;
  if (x.dtype() != DType::f32 && x.dtype() != DType::f16) return str(dtype_name(x.dtype()), " (float rows only)");
  if (auto why = fp16_ok(ctx, x.dtype()); !why.empty()) return why;
  int64_t R = 0;
  try {
    R = trailing_rows_length(ctx);
  } catch (const Error&) {
    return reduce_supports(ctx);  // the kernel reports the same error
  }
  if (R == 0 || x.numel() == 0) return "the reduced axes are not the trailing ones (or none, or empty)";
  if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
  if (auto why = loop_budget_ok(ctx, static_cast<uint64_t>(R) + 1, str("a row of ", R, " elements")); !why.empty())
    return why;
  return fits_bindings(ctx);
}

}  // namespace

constexpr DTypeSet kReduceTypes = kF32 | kF16 | kI32 | kI64;
constexpr DTypeSet kArgTypes = kReduceTypes | kI8 | kU8;

PORTA_REGISTER_KERNEL(ReduceSum, vulkan, kF32 | kF16, reduce_rows_vulkan<kSum>, reduce_rows_supports, (KernelImpl{"rows", 1}))
PORTA_REGISTER_KERNEL(ReduceSum, vulkan, kReduceTypes, reduce_op_vulkan<kSum>, reduce_supports, (KernelImpl{"workgroups", 0}))
PORTA_REGISTER_KERNEL(ReduceMean, vulkan, kF32 | kF16, reduce_rows_vulkan<kMean>, reduce_rows_supports, (KernelImpl{"rows", 1}))
PORTA_REGISTER_KERNEL(ReduceMean, vulkan, kReduceTypes, reduce_op_vulkan<kMean>, reduce_supports, (KernelImpl{"workgroups", 0}))
PORTA_REGISTER_KERNEL(ReduceMax, vulkan, kF32 | kF16, reduce_rows_vulkan<kMax>, reduce_rows_supports, (KernelImpl{"rows", 1}))
PORTA_REGISTER_KERNEL(ReduceMax, vulkan, kReduceTypes, reduce_op_vulkan<kMax>, reduce_supports, (KernelImpl{"workgroups", 0}))
PORTA_REGISTER_KERNEL(ReduceMin, vulkan, kF32 | kF16, reduce_rows_vulkan<kMin>, reduce_rows_supports, (KernelImpl{"rows", 1}))
PORTA_REGISTER_KERNEL(ReduceMin, vulkan, kReduceTypes, reduce_op_vulkan<kMin>, reduce_supports, (KernelImpl{"workgroups", 0}))
// reduce.comp also implements Prod, SumSquare, L1, L2, LogSum and LogSumExp (OP 4-9); they are
// registered once those ops have definitions (a kernel needs a schema to be tested against).
PORTA_REGISTER_KERNEL(ArgMax, vulkan, kArgTypes, reduce_op_vulkan<kArgMax>, reduce_supports)
PORTA_REGISTER_KERNEL(ArgMin, vulkan, kArgTypes, reduce_op_vulkan<kArgMin>, reduce_supports)

}  // namespace porta::vk
