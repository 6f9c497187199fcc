// Gather on vulkan: indices are checked on the host (an index out of range is a ShapeError,
// never an out-of-bounds read), normalised to non-negative int32, and gather.comp moves the
// rows as raw bits of the element size.
#include "kernels/vulkan/movement.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"

namespace porta::vk {
namespace {

void gather_vulkan(KernelContext& ctx) {
  const Tensor& data = ctx.in(0);
  const Tensor& indices = ctx.in(1);
  Tensor& y = ctx.out(0);
  int r = data.rank();
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), r, "Gather");
  int64_t dim = data.shape()[axis];
  std::vector<int64_t> raw = opdef::host_index_values(indices.to(Device::cpu()));
  std::vector<int32_t> idx(raw.size());
  for (size_t j = 0; j < raw.size(); ++j) {
    opdef::check_gather_index(raw[j], dim, axis, data.shape());
    idx[j] = static_cast<int32_t>(raw[j] < 0 ? raw[j] + dim : raw[j]);
  }
  int64_t n = y.numel();
  if (n == 0) return;
  int64_t inner = 1;
  for (int i = static_cast<int>(axis) + 1; i < r; ++i) inner *= data.shape()[i];
  Tensor dev_idx = Tensor::from_host(idx.data(), {static_cast<int64_t>(idx.size())}, DType::i32, ctx.device);
  Launch l;
  l.shader = "gather";
  l.variant = dtype_size(y.dtype()) == 8 ? "b64" : dtype_size(y.dtype()) == 2 ? "b16"
              : dtype_size(y.dtype()) == 1 ? "b8" : "b32";
  l.args = {input(data), input(dev_idx), output(y)};
  l.push_u(n);
  l.push_u(inner);
  l.push_u(idx.size());
  l.push_u(dim);
  set_grid(l, device_caps(ctx), (n + 255) / 256);
  launch(ctx, std::move(l));
}

std::string gather_supports(const KernelContext& ctx) {
  if (auto why = movable(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  DType it = ctx.in(1).dtype();
  if (it != DType::i64 && it != DType::i32) return str("indices of dtype ", dtype_name(it));
  if (ctx.in(1).numel() >= (int64_t{1} << 31)) return "more than 2^31 indices";
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Gather, vulkan, kAllTypes, gather_vulkan, gather_supports)

}  // namespace porta::vk
