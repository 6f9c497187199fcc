// porta vulkan kernels — launchers for copy.comp and fill.comp.
#include "kernels/vulkan/movement.hpp"

#include <cstring>

#include "porta/half.hpp"

namespace porta::vk {

std::string bits_variant(DType t) {
  switch (dtype_size(t)) {
    case 1: return "b8";
    case 2: return "b16";
    case 8: return "b64";
    default: return "b32";
  }
}

std::vector<int64_t> strides_of(const Shape& shape) { return contiguous_strides(shape); }

std::string movable(const KernelContext& ctx, DType t) {
  if (dtype_size(t) == 1 && !device_caps(ctx).int8_storage) return "the device has no 8-bit storage";
  if (dtype_size(t) == 2 && !device_caps(ctx).fp16_storage) return "the device has no 16-bit storage";
  return "";
}

std::string rank_ok(int rank) {
  return rank <= kMaxRank ? "" : str("rank ", rank, " is above the ", kMaxRank, " axes the kernel indexes");
}

std::string copy_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  if (auto why = rank_ok(ctx.in(0).rank()); !why.empty()) return why;
  return fits_bindings(ctx);
}

// Whether copy_texel.comp can run merged plan `m` on this device: CPU-like, 32- or 16-bit
// elements as unsigned texels, the innermost axis contiguous on both sides and a multiple of 4
// long (not wrapped), every other stride and both bases multiples of 4, the source within
// maxTexelBufferElements.
static bool texel_copy_ok(const KernelContext& ctx, const Tensor& src, const Tensor& dst, const CopyPlan& m) {
  const DeviceCaps& caps = device_caps(ctx);
  const size_t elem = dtype_size(dst.dtype());
  if (!cpu_like_ok(ctx, "copy.comp").empty() || !((elem == 4 && caps.texel_rgba32ui) || (elem == 2 && caps.texel_rgba16ui))) return false;
  if (dtype_size(src.dtype()) != elem || static_cast<uint64_t>(src.numel() + 3) / 4 > caps.max_texels) return false;
  const size_t k = m.shape.size() - 1;
  if (m.src_stride[k] != 1 || m.dst_stride[k] != 1 || m.shape[k] % 4 || m.src_mod[k] != 0) return false;
  for (size_t d = 0; d < k; ++d)
    if (m.src_stride[d] % 4 || m.dst_stride[d] % 4) return false;
  return m.src_base % 4 == 0 && m.dst_base % 4 == 0;
}

// Whether copy_gather.comp can run merged plan `m`: CPU-like, 32- or 16-bit elements as
// one-element unsigned texels, the destination's innermost axis contiguous and a multiple of 4
// long, its other strides and base multiples of 4, the source within maxTexelBufferElements.
// With `one`: one element per invocation (32-bit elements), any destination.
static bool gather_copy_ok(const KernelContext& ctx, const Tensor& src, const Tensor& dst, const CopyPlan& m,
                           bool one = false) {
  const DeviceCaps& caps = device_caps(ctx);
  const size_t elem = dtype_size(dst.dtype());
  if (!cpu_like_ok(ctx, "copy.comp").empty() || !((elem == 4 && caps.texel_r32ui) || (elem == 2 && caps.texel_r16ui)))
    return false;
  if (dtype_size(src.dtype()) != elem || static_cast<uint64_t>(src.numel()) > caps.max_texels) return false;
  if (one) return elem == 4;
  const size_t k = m.shape.size() - 1;
  if (m.dst_stride[k] != 1 || m.shape[k] % 4) return false;
  for (size_t d = 0; d < k; ++d)
    if (m.dst_stride[d] % 4) return false;
  return m.dst_base % 4 == 0;
}

// On a CPU-like device a copy whose plan is whole runs of contiguous elements on both sides is
// one transfer command of a region per run where that is cheaper than a dispatch: lavapipe
// executes a transfer on its queue's thread (a memcpy per region, about 0.3 us each besides the
// bytes), while a dispatch goes to its compute threads and back (tens of us on a VM) and moves
// bytes slower than memcpy. So: at most kShortRuns runs of any length, or at most kLongRuns
// runs of at least kLongRunBytes (docs/VULKAN.md, "Copies as transfers").
constexpr int64_t kShortRuns = 128;
constexpr int64_t kLongRuns = 4096;
constexpr int64_t kLongRunBytes = 1024;

static bool region_copy(const KernelContext& ctx, const Tensor& src, const Tensor& dst, const CopyPlan& m) {
  if (device_caps(ctx).type != "cpu" || !device_context(ctx).region_copies || src.device() != ctx.device ||
      dst.device() != ctx.device)
    return false;
  const size_t k = m.shape.size() - 1;
  if (m.src_stride[k] != 1 || m.dst_stride[k] != 1) return false;
  for (int64_t mod : m.src_mod)
    if (mod != 0) return false;
  int64_t runs = 1;
  for (size_t d = 0; d < k; ++d) runs *= m.shape[d];
  const int64_t elem = static_cast<int64_t>(dtype_size(dst.dtype()));
  if (runs > kLongRuns || (runs > kShortRuns && m.shape[k] * elem < kLongRunBytes)) return false;
  for (size_t d = 0; d < k; ++d)
    if (m.dst_stride[d] == 0) return false;  // every run written once
  const int64_t src_at = (src.offset() + m.src_base) * elem, dst_at = (dst.offset() + m.dst_base) * elem;
  std::vector<VkBufferCopy> regions;
  regions.reserve(static_cast<size_t>(runs));
  std::vector<int64_t> idx(k, 0);
  for (int64_t r = 0; r < runs; ++r) {
    int64_t s = 0, t = 0;
    for (size_t d = 0; d < k; ++d) {
      s += idx[d] * m.src_stride[d];
      t += idx[d] * m.dst_stride[d];
    }
    if (src_at + s * elem < 0 || dst_at + t * elem < 0) return false;
    regions.push_back({static_cast<VkDeviceSize>(src_at + s * elem), static_cast<VkDeviceSize>(dst_at + t * elem),
                       static_cast<VkDeviceSize>(m.shape[k] * elem)});
    for (size_t d = k; d-- > 0;) {
      if (++idx[d] < m.shape[d]) break;
      idx[d] = 0;
    }
  }
  auto* from = static_cast<Buffer*>(src.storage()->handle());
  auto* to = static_cast<Buffer*>(dst.storage()->handle());
  return device_context(ctx).copy_regions(to, from, std::move(regions));
}

void run_copy(const KernelContext& ctx, const Tensor& src, const Tensor& dst, CopyPlan plan) {
  int64_t n = 1;
  for (int64_t s : plan.shape) n *= s;
  if (n == 0) return;
  // Drop unit axes, then merge an axis into the previous one when both maps stay linear.
  CopyPlan m;
  m.src_base = plan.src_base;
  m.dst_base = plan.dst_base;
  for (size_t d = 0; d < plan.shape.size(); ++d) {
    int64_t size = plan.shape[d];
    if (size == 1) continue;
    bool wraps = plan.src_mod[d] != 0 && plan.src_mod[d] < size;
    if (!m.shape.empty()) {
      size_t k = m.shape.size() - 1;
      bool prev_wraps = m.src_mod[k] != 0 && m.src_mod[k] < m.shape[k];
      if (!wraps && !prev_wraps && m.src_stride[k] == plan.src_stride[d] * size &&
          m.dst_stride[k] == plan.dst_stride[d] * size) {
        m.shape[k] *= size;
        m.src_stride[k] = plan.src_stride[d];
        m.dst_stride[k] = plan.dst_stride[d];
        m.src_mod[k] = 0;
        continue;
      }
    }
    m.axis(size, plan.src_stride[d], plan.dst_stride[d], wraps ? plan.src_mod[d] : 0);
  }
  if (m.shape.empty()) m.axis(1, 0, 0);
  if (m.shape.size() > static_cast<size_t>(kMaxRank))
    throw Unsupported(str("[vulkan copy] ", m.shape.size(), " axes after merging (at most ", kMaxRank, ")"));
  if (region_copy(ctx, src, dst, m)) return;
  Launch l;
  l.shader = "copy";
  l.variant = bits_variant(dst.dtype());
  l.args = {input(src), output(dst)};
  if (texel_copy_ok(ctx, src, dst, m)) {
    // Four elements per invocation (copy_texel.comp): the plan in texels.
    const size_t k = m.shape.size() - 1;
    m.shape[k] /= 4;
    for (size_t d = 0; d < k; ++d) {
      m.src_stride[d] /= 4;
      m.dst_stride[d] /= 4;
    }
    m.src_base /= 4;
    m.dst_base /= 4;
    n /= 4;
    l.shader = "copy_texel";
    l.args = {texel_bits(src), output(dst)};
  } else if (gather_copy_ok(ctx, src, dst, m)) {
    // Four destination elements per invocation, each gathered (copy_gather.comp): the
    // destination in texels, the source in elements.
    const size_t k = m.shape.size() - 1;
    m.shape[k] /= 4;
    for (size_t d = 0; d < k; ++d) m.dst_stride[d] /= 4;
    m.dst_base /= 4;
    n /= 4;
    l.shader = "copy_gather";
    l.args = {scalar_texel_bits(src), output(dst), output(dst)};
    l.spec = {static_cast<uint64_t>(n) < kDiv21Bound ? 1 : 0, 0};
  } else if (gather_copy_ok(ctx, src, dst, m, true)) {
    // One element per invocation, gathered (copy_gather.comp's ONE), strides in elements.
    l.shader = "copy_gather";
    l.args = {scalar_texel_bits(src), output(dst), output(dst)};
    l.spec = {static_cast<uint64_t>(n) < kDiv21Bound ? 1 : 0, 1};
  }
  l.push_u(n);
  l.push_u(m.shape.size());
  l.push_i(m.src_base);
  l.push_u(m.dst_base);
  for (int k = 0; k < 4; ++k)
    for (int d = 0; d < kMaxRank; ++d) {
      bool in = d < static_cast<int>(m.shape.size());
      switch (k) {
        case 0: l.push_u(in ? m.shape[d] : 1); break;
        case 1: l.push_i(in ? m.src_stride[d] : 0); break;
        case 2: l.push_u(in && m.src_mod[d] ? m.src_mod[d] : 0xFFFFFFFFu); break;
        default: l.push_u(in ? m.dst_stride[d] : 0); break;
      }
    }
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

void run_copy(const KernelContext& ctx, const Tensor& src, const opdef::StridedView& from, const Tensor& dst,
              const opdef::StridedView& to) {
  CopyPlan plan;
  plan.src_base = from.offset;
  plan.dst_base = to.offset;
  for (size_t i = 0; i < to.shape.size(); ++i) plan.axis(to.shape[i], from.strides[i], to.strides[i]);
  run_copy(ctx, src, dst, std::move(plan));
}

void run_fill_bits(const KernelContext& ctx, const Tensor& dst, uint64_t bits) {
  int64_t n = dst.numel();
  if (n == 0) return;
  Launch l;
  l.shader = "fill";
  l.variant = bits_variant(dst.dtype());
  l.args = {output(dst)};
  l.push_u(n);
  l.push_u(bits & 0xFFFFFFFFu);
  l.push_u(bits >> 32);
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

void run_fill(const KernelContext& ctx, const Tensor& dst, double value) {
  Tensor one = Tensor::from_values({value}, {}, dst.dtype());
  uint64_t bits = 0;
  std::memcpy(&bits, one.raw_data(), dtype_size(dst.dtype()));
  run_fill_bits(ctx, dst, bits);
}

}  // namespace porta::vk
