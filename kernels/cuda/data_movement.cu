// porta gpu kernels — data-movement ops as views copied by copy_view: Reshape-likes,
// Identity, Dropout (inference), Transpose, Slice, Expand, Tile, Concat, Split, StridedCopy
// (ai.porta). The views come
// from ops/view_util.hpp, as on cpu and vulkan, and shape values from the same helpers as
// inference (ops/shape_util.hpp), so geometry cannot disagree.
#include "kernels/cuda/copy_view.cuh"
#include "ops/common.hpp"
#include "ops/dropout_util.hpp"
#include "ops/shape_util.hpp"
#include "ops/view_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

// Reshape, Flatten, Squeeze, Unsqueeze, Identity: the bytes, unless the session aliased them.
void reshape_like_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  copy_view(x.reshape(y.shape()), y, ctx.device);
}

void dropout_gpu(KernelContext& ctx) {
  opdef::require_identity_dropout(ctx.inputs);
  copy_view(ctx.in(0), ctx.out(0), ctx.device);
  if (ctx.outputs.size() > 1 && ctx.out(1).defined() && ctx.out(1).numel() > 0)  // mask: all kept
    PORTA_GPU_CHECK(ctx.device.index, cudaMemsetAsync(device_ptr<bool>(ctx.out(1)), 1, ctx.out(1).nbytes(),
                                                      stream(ctx.device.index)));
}

void transpose_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  std::vector<int64_t> perm =
      opdef::transpose_perm(x.shape().size(), ctx.attrs->get_ints("perm", {}), "Transpose");
  copy_view(x.permute(std::vector<int>(perm.begin(), perm.end())), ctx.out(0), ctx.device);
}

void slice_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::StridedView v = opdef::slice_view(opdef::view_of(x), opdef::slice_geometry_of(ctx));
  copy_view(x.as_strided(v.shape, v.strides, v.offset), y, ctx.device);
}

void strided_copy_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  opdef::StridedView v = opdef::strided_copy_view(ctx);
  if (y.numel() == 0) return;
  copy_view(x.as_strided(v.shape, v.strides, x.offset() + v.offset), y.reshape(v.shape), ctx.device);
}

void expand_gpu(KernelContext& ctx) { copy_view(ctx.in(0), ctx.out(0), ctx.device); }

void tile_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::TileViews t = opdef::tile_views(opdef::view_of(x), opdef::view_of(y));
  copy_view(x.as_strided(t.src.shape, t.src.strides, t.src.offset),
            y.as_strided(t.dst.shape, t.dst.strides, t.dst.offset), ctx.device);
}

void concat_gpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  opdef::AxisParts p = opdef::concat_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.in(part.index).numel() > 0)
      copy_view(ctx.in(part.index), y.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size),
                ctx.device);
}

void split_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  opdef::AxisParts p = opdef::split_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.out(part.index).numel() > 0)
      copy_view(x.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size), ctx.out(part.index),
                ctx.device);
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL(Reshape, kAllTypes, reshape_like_gpu)
PORTA_REGISTER_GPU_KERNEL(Flatten, kAllTypes, reshape_like_gpu)
PORTA_REGISTER_GPU_KERNEL(Squeeze, kAllTypes, reshape_like_gpu)
PORTA_REGISTER_GPU_KERNEL(Unsqueeze, kAllTypes, reshape_like_gpu)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Identity, kAllTypes, expand_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Dropout, kFloats, dropout_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Transpose, kAllTypes, transpose_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Slice, kAllTypes, slice_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Expand, kAllTypes, expand_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Tile, kAllTypes, tile_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Concat, kAllTypes, concat_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL_STRIDED(Split, kAllTypes, split_gpu, nullptr)
PORTA_REGISTER_GPU_KERNEL(StridedCopy, kAllTypes, strided_copy_gpu)

}  // namespace porta::PORTA_GPU_NS
