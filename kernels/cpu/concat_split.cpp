// Concat and Split on cpu: each input (output) is copied into (out of) its slab of the other.
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "ops/common.hpp"
#include "ops/shape_util.hpp"

namespace porta::cpu {

static void concat_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), y.rank(), "Concat");
  int64_t base = 0;
  for (const Tensor& x : ctx.inputs) {
    int64_t n = x.shape()[axis];
    if (x.numel() > 0) copy_strided(x, y.slice(static_cast<int>(axis), base, base + n));
    base += n;
  }
}

static void split_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Split");
  std::vector<int64_t> split =
      ctx.has_input(1) ? opdef::tensor_ints(ctx.in(1)) : ctx.attrs->get_ints("split", {});
  std::vector<int64_t> sizes = opdef::split_sizes(x.shape(), axis, split, ctx.outputs.size(), "Split");
  int64_t base = 0;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const Tensor& y = ctx.outputs[i];
    if (y.defined() && y.numel() > 0)  // an output the node leaves unused may be undefined
      copy_strided(x.slice(static_cast<int>(axis), base, base + sizes[i]), y);
    base += sizes[i];
  }
}

PORTA_REGISTER_KERNEL(Concat, cpu, kAllTypes, concat_cpu)
PORTA_REGISTER_KERNEL(Split, cpu, kAllTypes, split_cpu)

}  // namespace porta::cpu
