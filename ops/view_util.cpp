// porta ops — the parts of ops/view_util.hpp that read a call's inputs and attributes.
#include "ops/view_util.hpp"

#include "ops/common.hpp"

namespace porta::opdef {

SliceGeometry slice_geometry_of(const KernelContext& ctx) {
  return slice_geometry(ctx.in(0).shape(), optional_ints(ctx, 1), optional_ints(ctx, 2), optional_ints(ctx, 3),
                        optional_ints(ctx, 4), "Slice");
}

AxisParts concat_parts(const KernelContext& ctx) {
  AxisParts p;
  p.axis = normalize_axis(ctx.attrs->get_int("axis"), ctx.outputs.at(0).rank(), "Concat");
  int64_t begin = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& x = ctx.inputs[i];
    if (!x.defined()) continue;
    const int64_t size = x.shape()[static_cast<size_t>(p.axis)];
    p.parts.push_back({i, begin, size});
    begin += size;
  }
  return p;
}

AxisParts split_parts(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  AxisParts p;
  p.axis = normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Split");
  std::vector<int64_t> split = ctx.has_input(1) ? tensor_ints(ctx.in(1)) : ctx.attrs->get_ints("split", {});
  std::vector<int64_t> sizes = split_sizes(x.shape(), p.axis, split, ctx.outputs.size(), "Split");
  int64_t begin = 0;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    if (ctx.outputs[i].defined()) p.parts.push_back({i, begin, sizes[i]});  // an unused output may be undefined
    begin += sizes[i];
  }
  return p;
}

}  // namespace porta::opdef
