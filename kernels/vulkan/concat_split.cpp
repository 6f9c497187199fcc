// Concat and Split on vulkan: one copy.comp dispatch per input (Concat) or output (Split),
// placing it in its window along the axis (ops/view_util.hpp). On CPU-like devices Concat runs
// concat_texel.comp first ("texel"): up to 8 inputs per dispatch, 4 elements per invocation
// (DenseNet concatenates all earlier feature maps in every layer: 62 Concats of up to 32
// inputs in densenet121).
#include "kernels/vulkan/movement.hpp"
#include "ops/common.hpp"

namespace porta::vk {
namespace {

void concat_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  opdef::AxisParts p = opdef::concat_parts(ctx);
  const opdef::StridedView whole = opdef::dense_view(y.shape());
  for (const opdef::AxisPart& part : p.parts) {
    const Tensor& x = ctx.in(part.index);
    run_copy(ctx, x, opdef::dense_view(x.shape()), y, opdef::axis_window(whole, p.axis, part.begin, part.size));
  }
}

// ---- "texel": CPU-like devices ---------------------------------------------------------------

constexpr size_t kConcatParts = 8;  // inputs per concat_texel.comp dispatch

std::string concat_split_supports(const KernelContext& ctx);

// Elements per outer index (the product of the axes before the concatenated one) of each
// defined input, and of the output.
struct ConcatRows {
  opdef::AxisParts parts;
  int64_t outer = 1, inner = 1;
};
ConcatRows concat_rows(const KernelContext& ctx) {
  ConcatRows r;
  // From the inputs (a call being resolved may not carry its output yet).
  const Tensor& x = ctx.in(0);
  r.parts.axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Concat");
  int64_t begin = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (!ctx.inputs[i].defined()) continue;
    const Tensor& t = ctx.inputs[i];
    if (t.rank() != x.rank()) throw ShapeError("[Concat] inputs of different ranks");
    const int64_t size = t.shape()[static_cast<size_t>(r.parts.axis)];
    r.parts.parts.push_back({i, begin, size});
    begin += size;
  }
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < r.parts.axis) r.outer *= x.shape()[d];
    if (d > r.parts.axis) r.inner *= x.shape()[d];
  }
  return r;
}

void concat_texel_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const ConcatRows r = concat_rows(ctx);
  const int64_t row_quads = y.numel() / r.outer / 4;
  const std::vector<opdef::AxisPart>& parts = r.parts.parts;
  for (size_t g = 0; g < parts.size(); g += kConcatParts) {
    const size_t count = std::min(kConcatParts, parts.size() - g);
    const int64_t first = parts[g].begin * r.inner / 4;
    Launch l;
    l.shader = "concat_texel";
    l.variant = bits_variant(y.dtype());
    uint32_t ends[kConcatParts] = {}, quads[kConcatParts] = {};
    int64_t end = 0;
    for (size_t k = 0; k < kConcatParts; ++k) {
      const opdef::AxisPart& part = parts[g + std::min(k, count - 1)];
      l.args.push_back(texel_bits(ctx.in(part.index)));
      if (k < count) end += part.size * r.inner / 4;
      ends[k] = static_cast<uint32_t>(end);
      quads[k] = static_cast<uint32_t>(part.size * r.inner / 4);
    }
    l.args.push_back(output(y));
    const uint64_t n = static_cast<uint64_t>(r.outer * end);
    if (n == 0) continue;
    l.spec = {n < kDiv21Bound ? 1 : 0};
    l.local_size = 64;
    l.push_u(n);
    l.push_u(end);
    l.push_u(row_quads);
    l.push_u(first);
    for (uint32_t v : ends) l.push_u(v);
    for (uint32_t v : quads) l.push_u(v);
    set_grid(l, device_caps(ctx), (n + 63) / 64);
    launch(ctx, std::move(l));
  }
}

std::string concat_texel_supports(const KernelContext& ctx) {
  if (auto why = cpu_like_ok(ctx, "one copy per input"); !why.empty()) return why;
  const DType t = ctx.in(0).dtype();
  const size_t elem = dtype_size(t);
  const DeviceCaps& caps = device_caps(ctx);
  if (!((elem == 4 && caps.texel_rgba32ui) || (elem == 2 && caps.texel_rgba16ui)))
    return str(dtype_name(t), " elements (4- and 2-byte elements move as texels)");
  try {
    const ConcatRows r = concat_rows(ctx);
    // It saves dispatches, but picks each texel's input per invocation: for one or two inputs
    // a texel copy each is faster (two 4096x4096 inputs: 89 ms here against 65).
    if (r.parts.parts.size() < 3) return str(r.parts.parts.size(), " input(s): one texel copy each is faster");
    for (const opdef::AxisPart& part : r.parts.parts) {
      const Tensor& x = ctx.in(part.index);
      if (x.dtype() != t) return "inputs of different dtypes";
      if (part.size * r.inner % 4) return str("an input's share of a row (", part.size * r.inner, " elements) is not a multiple of 4");
      if (static_cast<uint64_t>(x.numel() / 4) > caps.max_texels) return "an input exceeds maxTexelBufferElements";
    }
  } catch (const Error&) {
    return concat_split_supports(ctx);  // invalid axis: the kernel reports the same error
  }
  return concat_split_supports(ctx);
}

void split_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  opdef::AxisParts p = opdef::split_parts(ctx);
  const opdef::StridedView whole = opdef::dense_view(x.shape());
  for (const opdef::AxisPart& part : p.parts) {
    Tensor& y = ctx.out(part.index);
    run_copy(ctx, x, opdef::axis_window(whole, p.axis, part.begin, part.size), y, opdef::dense_view(y.shape()));
  }
}

std::string concat_split_supports(const KernelContext& ctx) {
  size_t total = 0;  // Concat's output holds every input
  for (const Tensor& t : ctx.inputs) {
    if (!t.defined()) continue;
    total += t.nbytes();
    if (auto why = movable(ctx, t.dtype()); !why.empty()) return why;
    if (auto why = rank_ok(t.rank()); !why.empty()) return why;
  }
  if (total > device_caps(ctx).max_storage_range)
    return str("the result has ", total, " bytes, more than maxStorageBufferRange (",
               device_caps(ctx).max_storage_range, ")");
  return fits_bindings(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Concat, vulkan, kAllTypes, concat_texel_vulkan, concat_texel_supports, (KernelImpl{"texel", 1}))
PORTA_REGISTER_KERNEL(Concat, vulkan, kAllTypes, concat_vulkan, concat_split_supports, (KernelImpl{"copies", 0}))
PORTA_REGISTER_KERNEL(Split, vulkan, kAllTypes, split_vulkan, concat_split_supports)

}  // namespace porta::vk
