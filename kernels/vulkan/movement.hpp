// porta vulkan kernels — data movement on copy.comp / fill.comp: every dtype is moved as raw
// bits of its size (8, 16, 32 or 64), so these kernels serve all dtypes.
#pragma once
#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/view_util.hpp"

namespace porta::vk {

/// An index map for copy.comp (see its header). src_mod 0 means "no wrap-around".
struct CopyPlan {
  std::vector<int64_t> shape, src_stride, src_mod, dst_stride;
  int64_t src_base = 0, dst_base = 0;
  /// Adds an axis of the iteration space.
  void axis(int64_t size, int64_t src_stride_, int64_t dst_stride_, int64_t src_mod_ = 0) {
    shape.push_back(size);
    src_stride.push_back(src_stride_);
    dst_stride.push_back(dst_stride_);
    src_mod.push_back(src_mod_);
  }
};

/// Copies per `plan` from `src` into `dst` (same dtype). Axes are merged where possible;
/// throws Unsupported beyond 6 axes after merging (supports checks avoid that).
void run_copy(const KernelContext& ctx, const Tensor& src, const Tensor& dst, CopyPlan plan);
/// Copies the elements of `src` seen as view `from` into those of `dst` seen as view `to`
/// (same shape; views relative to each tensor's first element, e.g. opdef::dense_view).
void run_copy(const KernelContext& ctx, const Tensor& src, const opdef::StridedView& from, const Tensor& dst,
              const opdef::StridedView& to);
/// Fills the whole of `dst` with `value` converted to its dtype.
void run_fill(const KernelContext& ctx, const Tensor& dst, double value);
/// Fills `dst` with the raw bits of a one-element host tensor of dst's dtype.
void run_fill_bits(const KernelContext& ctx, const Tensor& dst, uint64_t bits);
/// "" when the device can move elements of dtype `t` (8-bit types need 8-bit storage).
std::string movable(const KernelContext& ctx, DType t);
/// The shader variant moving elements of dtype `t` as raw bits: "b8", "b16", "b32" or "b64".
std::string bits_variant(DType t);
/// Rank limit for movement kernels' supports checks.
std::string rank_ok(int rank);
/// What a copy.comp kernel over input 0 needs: its dtype movable, its rank within kMaxRank and
/// every tensor within one binding. "" or the reason to decline.
std::string copy_supports(const KernelContext& ctx);
/// Row-major element strides of a shape.
std::vector<int64_t> strides_of(const Shape& shape);

}  // namespace porta::vk
