// porta gpu kernels — data-movement ops as views copied by copy_view: Reshape-likes,
// Identity, Dropout (inference), Transpose, Slice, Expand, Tile, Concat, Split. The views are
// the same ones the cpu kernels copy (kernels/cpu/*.cpp), and shape values come from the same
// helpers as inference (ops/shape_util.hpp), so geometry cannot disagree.
#include "kernels/cuda/copy_view.cuh"
#include "ops/common.hpp"
#include "ops/dropout_util.hpp"
#include "ops/shape_util.hpp"

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
  opdef::SliceGeometry g = opdef::slice_geometry(
      x.shape(), opdef::optional_ints(ctx, 1), opdef::optional_ints(ctx, 2),
      opdef::optional_ints(ctx, 3), opdef::optional_ints(ctx, 4), "Slice");
  int64_t offset = x.offset();
  std::vector<int64_t> strides(x.rank());
  for (int i = 0; i < x.rank(); ++i) {
    offset += g.start[i] * x.strides()[i];
    strides[i] = g.step[i] * x.strides()[i];  // negative for reversed slices
  }
  copy_view(x.as_strided(y.shape(), strides, offset), y, ctx.device);
}

void expand_gpu(KernelContext& ctx) { copy_view(ctx.in(0), ctx.out(0), ctx.device); }

// Output axis i of size r*d is viewed as (r, d): the input is read with stride 0 along r.
void tile_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  Shape split;
  std::vector<int64_t> src_strides;
  for (int i = 0; i < x.rank(); ++i) {
    split.push_back(y.shape()[i] / x.shape()[i]);
    split.push_back(x.shape()[i]);
    src_strides.push_back(0);
    src_strides.push_back(x.strides()[i]);
  }
  copy_view(x.as_strided(split, src_strides, x.offset()),
            y.as_strided(split, contiguous_strides(split), y.offset()), ctx.device);
}

void concat_gpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), y.rank(), "Concat");
  int64_t base = 0;
  for (const Tensor& x : ctx.inputs) {
    int64_t n = x.shape()[axis];
    if (x.numel() > 0) copy_view(x, y.slice(static_cast<int>(axis), base, base + n), ctx.device);
    base += n;
  }
}

void split_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Split");
  std::vector<int64_t> split =
      ctx.has_input(1) ? opdef::tensor_ints(ctx.in(1)) : ctx.attrs->get_ints("split", {});
  std::vector<int64_t> sizes = opdef::split_sizes(x.shape(), axis, split, ctx.outputs.size(), "Split");
  int64_t base = 0;
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const Tensor& y = ctx.outputs[i];
    if (y.defined() && y.numel() > 0)
      copy_view(x.slice(static_cast<int>(axis), base, base + sizes[i]), y, ctx.device);
    base += sizes[i];
  }
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

}  // namespace porta::PORTA_GPU_NS
