// Gather on vulkan: indices are checked on the host (an index out of range is a ShapeError,
// never an out-of-bounds read; constant indices once per session step), normalised to
// non-negative int32, and gather.comp ("elements") moves the rows as raw bits of the element
// size; on CPU-like devices gather_texel.comp ("texel") moves rows of a multiple of 4 elements
// 4 at a time.
#include "kernels/vulkan/movement.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"

namespace porta::vk {
namespace {

// The validated indices as an int32 device tensor. Each read back waits for the device, so
// the indices come from the session's host copy where it has one (KernelContext::host_copies),
// and indices that are a session constant are checked once per step (ctx.state).
Tensor device_indices(KernelContext& ctx, int64_t axis, int64_t dim) {
  struct Cached {
    const void* storage;
    int64_t offset;
    Shape data_shape;
    int64_t axis;
    Tensor indices;
  };
  const Tensor &data = ctx.in(0), &indices = ctx.in(1);
  auto* cached = static_cast<Cached*>(ctx.state.get());
  if (cached && cached->storage == indices.storage().get() && cached->offset == indices.offset() &&
      cached->data_shape == data.shape() && cached->axis == axis)
    return cached->indices;
  std::vector<int64_t> raw = opdef::host_index_values(ctx.on_host(1));
  std::vector<int32_t> idx(raw.size());
  for (size_t j = 0; j < raw.size(); ++j) {
    opdef::check_gather_index(raw[j], dim, axis, data.shape());
    idx[j] = static_cast<int32_t>(raw[j] < 0 ? raw[j] + dim : raw[j]);
  }
  Tensor dev = Tensor::from_host(idx.data(), {static_cast<int64_t>(idx.size())}, DType::i32, ctx.device);
  if (ctx.is_constant_input(1))
    ctx.state = std::make_shared<Cached>(Cached{indices.storage().get(), indices.offset(), data.shape(), axis, dev});
  return dev;
}

// "texel" (CPU-like devices, rows of a multiple of 4 elements of 4 or 2 bytes) or "elements".
void gather_run(KernelContext& ctx, bool texel) {
  const Tensor& data = ctx.in(0);
  Tensor& y = ctx.out(0);
  int r = data.rank();
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), r, "Gather");
  int64_t dim = data.shape()[axis];
  Tensor dev_idx = device_indices(ctx, axis, dim);
  int64_t n = y.numel();
  if (n == 0) return;
  int64_t inner = 1;
  for (int i = static_cast<int>(axis) + 1; i < r; ++i) inner *= data.shape()[i];
  Launch l;
  l.shader = texel ? "gather_texel" : "gather";
  l.variant = bits_variant(y.dtype());
  l.args = {texel ? texel_bits(data) : input(data), input(dev_idx), output(y)};
  if (texel) {
    n /= 4;
    l.spec = {static_cast<uint64_t>(n) < kDiv21Bound ? 1 : 0};
    l.local_size = 64;
  }
  l.push_u(n);
  l.push_u(texel ? inner / 4 : inner);
  l.push_u(dev_idx.numel());
  l.push_u(dim);
  set_grid(l, device_caps(ctx), (n + l.local_size - 1) / l.local_size);
  launch(ctx, std::move(l));
}

void gather_vulkan(KernelContext& ctx) { gather_run(ctx, false); }
void gather_texel_vulkan(KernelContext& ctx) { gather_run(ctx, true); }

std::string gather_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  DType it = ctx.in(1).dtype();
  if (it != DType::i64 && it != DType::i32) return str("indices of dtype ", dtype_name(it));
  if (ctx.in(1).numel() >= (int64_t{1} << 31)) return "more than 2^31 indices";
  return fits_bindings(ctx);
}

std::string gather_texel_supports(const KernelContext& ctx) {
  if (auto why = cpu_like_ok(ctx, "gather.comp"); !why.empty()) return why;
  const Tensor& data = ctx.in(0);
  const size_t elem = dtype_size(data.dtype());
  const DeviceCaps& caps = device_caps(ctx);
  if (!((elem == 4 && caps.texel_rgba32ui) || (elem == 2 && caps.texel_rgba16ui)))
    return str(dtype_name(data.dtype()), " elements (4- and 2-byte elements move as texels)");
  int64_t inner = 1;
  try {
    int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), data.rank(), "Gather");
    for (int i = static_cast<int>(axis) + 1; i < data.rank(); ++i) inner *= data.shape()[i];
  } catch (const Error&) {
    return gather_supports(ctx);  // the kernel reports the same error
  }
  if (inner % 4) return str("rows of ", inner, " elements (texels of 4 need a multiple of 4)");
  if (static_cast<uint64_t>(data.numel() / 4) > caps.max_texels) return "the data exceeds maxTexelBufferElements";
  return gather_supports(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Gather, vulkan, kAllTypes, gather_texel_vulkan, gather_texel_supports, (KernelImpl{"texel", 1}))
PORTA_REGISTER_KERNEL(Gather, vulkan, kAllTypes, gather_vulkan, gather_supports, (KernelImpl{"elements", 0}))

}  // namespace porta::vk
