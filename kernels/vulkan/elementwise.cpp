// porta vulkan kernels — elementwise unary and binary ops. Each family is one shader
// (unary.comp, binary.comp); the op is a specialization constant and the element type a
// build-time variant, so every op and dtype below is a pipeline variant, not a copied shader.
// Same-shape operands larger than one binding are processed in aligned windows;
// broadcasting beyond that declines (CPU fallback, visible in `porta ops`).
#include <algorithm>
#include <array>
#include <bit>

#include "kernels/vulkan/elementwise.hpp"

namespace porta::vk {

namespace {
// Set while a kernel registered as implementation "texel" runs (texel_kernel).
thread_local bool t_texel = false;

struct TexelScope {
  bool previous = t_texel;
  TexelScope() { t_texel = true; }
  ~TexelScope() { t_texel = previous; }
};

std::string texel_sizes_ok(const KernelContext& ctx, int64_t n, DType t) {
  const DeviceCaps& caps = device_caps(ctx);
  if (n >= (int64_t{1} << 31)) return "more than 2^31 elements";
  if (static_cast<uint64_t>(n + 3) / 4 > caps.max_texels)
    return str((n + 3) / 4, " texels, more than the device's maxTexelBufferElements (", caps.max_texels, ")");
  uint64_t bytes = static_cast<uint64_t>(n) * dtype_size(t);
  if (bytes > binding_limit(ctx))
    return str("the output has ", bytes, " bytes, more than one binding (", binding_limit(ctx), ")");
  return "";
}

// The texel shaders' grid: one invocation per vec4 of the output.
void texel_grid(Launch& l, const DeviceCaps& caps, int64_t n) {
  uint64_t texels = static_cast<uint64_t>(n + 3) / 4;
  set_grid(l, caps, (texels + 255) / 256);
}
}  // namespace

KernelFn texel_kernel(void (*fn)(KernelContext&)) {
  return [fn](KernelContext& ctx) {
    TexelScope scope;
    fn(ctx);
  };
}

std::string texel_unary_supports(const KernelContext& ctx) {
  DType t = ctx.in(0).dtype();
  if (auto why = float_texels_ok(ctx, t, "the plain elementwise kernel"); !why.empty()) return why;
  return texel_sizes_ok(ctx, ctx.in(0).numel(), t);
}

// Texels of `big` per element of `small` where small is big's leading axes followed by unit
// axes (a per-channel scale [N, C, 1, 1] of [N, C, H, W]: squeeze-excite) and the block of
// trailing axes it repeats over is a multiple of 4 elements; 0 where it is not.
int64_t texel_block_period(const Shape& small, const Shape& big) {
  if (small.size() > big.size() || shape_numel(small) == 0) return 0;
  Shape s(big.size() - small.size(), 1);
  s.insert(s.end(), small.begin(), small.end());
  size_t k = 0;
  while (k < s.size() && s[k] == big[k]) ++k;
  if (k == 0 || k == s.size()) return 0;  // a single element (modes 1, 2) or the same shape
  for (size_t i = k; i < s.size(); ++i)
    if (s[i] != 1) return 0;
  int64_t inner = 1;
  for (size_t i = k; i < big.size(); ++i) inner *= big[i];
  return inner % 4 == 0 ? inner / 4 : 0;
}

// Whether `small` (leading unit axes aside) equals `big`'s trailing axes and has a multiple of 4
// elements: read along big's elements in big's order, small's texels repeat.
bool texel_repeats_in(const Shape& small, const Shape& big) {
  size_t lead = 0;
  while (lead < small.size() && small[lead] == 1) ++lead;
  size_t n = small.size() - lead;
  if (n == 0 || n > big.size() || shape_numel(small) % 4) return false;
  return std::equal(small.begin() + static_cast<std::ptrdiff_t>(lead), small.end(),
                    big.end() - static_cast<std::ptrdiff_t>(n));
}

// How binary_texel.comp reads a and b: its SCALAR constant `mode`, -1 when it cannot, and its
// texel period (push constant). One shape (0), a or b a single element (1, 2), b or a
// repeating along the other's leading axes (3, 4: period = its texels), b or a one element
// per block of the other's trailing axes (5, 6: period = texel_block_period).
struct TexelBinary {
  int mode = -1;
  int64_t period = 1;
};
TexelBinary texel_binary_mode(const Shape& a, const Shape& b) {
  if (a == b) return {0, 1};
  if (shape_numel(a) == 1 && shape_numel(b) >= 1) return {1, 1};
  if (shape_numel(b) == 1 && shape_numel(a) >= 1) return {2, 1};
  if (texel_repeats_in(b, a)) return {3, shape_numel(b) / 4};
  if (texel_repeats_in(a, b)) return {4, shape_numel(a) / 4};
  if (int64_t p = texel_block_period(b, a); p > 0) return {5, p};
  if (int64_t p = texel_block_period(a, b); p > 0) return {6, p};
  return {};
}

TexelRead texel_read(const Shape& in, const Shape& out) {
  const int64_t n = shape_numel(in);
  // Broadcast to `out`, an operand with as many elements has its shape (leading unit axes aside).
  if (n == shape_numel(out)) return {TexelRead::same, 1, n};
  if (n == 1) return {TexelRead::single, 1, 1};
  if (texel_repeats_in(in, out)) return {TexelRead::repeat, n / 4, n};
  if (in.size() > out.size() || n == 0) return {};
  // block: `in` (with out's rank) is 1 on its leading axes, out's on a run of axes after them,
  // and 1 on the trailing axes, whose block of out has a multiple of 4 elements.
  Shape s(out.size() - in.size(), 1);
  s.insert(s.end(), in.begin(), in.end());
  size_t k = 0;
  while (k < s.size() && s[k] == 1) ++k;
  while (k < s.size() && s[k] == out[k]) ++k;
  int64_t inner = 1;
  for (size_t i = k; i < s.size(); ++i) {
    if (s[i] != 1) return {};
    inner *= out[i];
  }
  if (k == s.size() || inner % 4 != 0) return {};
  return {TexelRead::block, inner / 4, n};
}

std::string texel_binary_supports(const KernelContext& ctx) {
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  if (auto why = float_texels_ok(ctx, a.dtype(), "the plain elementwise kernel"); !why.empty()) return why;
  if (a.dtype() != b.dtype()) return "operands have different dtypes";
  if (texel_binary_mode(a.shape(), b.shape()).mode < 0)
    return "the operands broadcast (texel: one shape, a single element, one repeating over the other's "
           "leading axes with a multiple of 4 elements, or one element of one per block of a multiple of 4 of the "
           "other's trailing axes)";
  return texel_sizes_ok(ctx, std::max(a.numel(), b.numel()), a.dtype());
}

// Elements per window: a multiple of the binding alignment that fits maxStorageBufferRange.
static int64_t window_elements(const DeviceCaps& caps, size_t elem) {
  uint64_t align = std::max<uint64_t>(caps.storage_alignment, 256);
  uint64_t bytes = caps.max_storage_range / align * align;
  return static_cast<int64_t>(std::min<uint64_t>(bytes / elem, uint64_t{1} << 30));
}

std::string numeric_variant(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    default: return "";
  }
}

std::string numeric_ok(const KernelContext& ctx, DType t) {
  const DeviceCaps& caps = device_caps(ctx);
  if (numeric_variant(t).empty()) return str("no shader variant for ", dtype_name(t));
  if (auto why = fp16_ok(ctx, t); !why.empty()) return why;
  if (t == DType::i64 && !caps.int64_arithmetic)
    return "the device has no 64-bit integer arithmetic (shaderInt64)";
  if ((t == DType::i8 || t == DType::u8) && !(caps.int8_storage && caps.int8_arithmetic))
    return "the device lacks 8-bit storage or 8-bit integer arithmetic";
  return "";
}

void run_unary_words(KernelContext& ctx, int op, const std::array<uint32_t, 4>& words) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const DeviceCaps& caps = device_caps(ctx);
  int64_t n = y.numel();
  if (t_texel) {
    if (n == 0) return;
    Launch l;
    l.shader = "unary_texel";
    l.variant = variant_for(y.dtype());
    l.spec = {op};
    l.args = {texels(x), output(y), output(y)};
    l.push_u(n);
    l.push.insert(l.push.end(), words.begin(), words.end() - 1);
    texel_grid(l, caps, n);
    launch(ctx, std::move(l));
    return;
  }
  size_t elem = dtype_size(y.dtype());
  int64_t window = window_elements(caps, elem);
  for (int64_t start = 0; start < n; start += window) {
    int64_t count = std::min(window, n - start);
    Launch l;
    l.shader = "unary";
    l.variant = numeric_variant(y.dtype());
    l.spec = {op};
    size_t off = static_cast<size_t>(start) * elem, bytes = static_cast<size_t>(count) * elem;
    l.args = {{x, false, off, bytes}, {y, true, off, bytes}};
    l.push_u(count);
    l.push.insert(l.push.end(), words.begin(), words.end());
    set_grid(l, caps, (count + 255) / 256);
    launch(ctx, std::move(l));
  }
}

void run_unary(KernelContext& ctx, int op, double alpha, double beta, double gamma) {
  auto bits = [](double v) { return std::bit_cast<uint32_t>(static_cast<float>(v)); };
  run_unary_words(ctx, op, {bits(alpha), bits(beta), bits(gamma), 0});
}

std::string unary_supports(const KernelContext& ctx) {
  return numeric_ok(ctx, ctx.in(0).dtype());
}

void run_binary(KernelContext& ctx, int op) { run_binary(ctx, op, ctx.in(0), ctx.in(1), ctx.out(0)); }

void run_binary(const KernelContext& ctx, int op, const Tensor& a, const Tensor& b, const Tensor& c) {
  const DeviceCaps& caps = device_caps(ctx);
  int64_t n = c.numel();
  if (n == 0) return;
  if (TexelBinary t = t_texel ? texel_binary_mode(a.shape(), b.shape()) : TexelBinary{}; t.mode >= 0) {
    Launch l;
    l.shader = "binary_texel";
    l.variant = variant_for(c.dtype());
    l.spec = {op, t.mode};
    l.args = {texels(a), texels(b), output(c), output(c)};
    l.push_u(n);
    l.push_u(t.period);
    texel_grid(l, caps, n);
    launch(ctx, std::move(l));
    return;
  }
  BroadcastMap m = broadcast_map(c.shape(), {a.shape(), b.shape()});
  size_t elem = dtype_size(c.dtype());
  bool same_shape = a.numel() == n && b.numel() == n;
  int64_t window = same_shape ? window_elements(caps, elem) : n;
  for (int64_t start = 0; start < n; start += window) {
    int64_t count = std::min(window, n - start);
    Launch l;
    l.shader = "binary";
    l.variant = numeric_variant(c.dtype());
    l.spec = {op};
    if (same_shape) {
      size_t off = static_cast<size_t>(start) * elem, bytes = static_cast<size_t>(count) * elem;
      l.args = {{a, false, off, bytes}, {b, false, off, bytes}, {c, true, off, bytes}};
      l.push_u(count);
      l.push_u(1);
      std::vector<uint32_t> rest(18, 0);
      rest[0] = static_cast<uint32_t>(count);
      rest[6] = 1;
      rest[12] = 1;
      l.push.insert(l.push.end(), rest.begin(), rest.end());
    } else {
      l.args = {input(a), input(b), output(c)};
      l.push_u(n);
      l.push_u(m.shape.size());
      for (int k = 0; k < 3; ++k) {
        const std::vector<int64_t>& v = k == 0 ? m.shape : m.strides[k - 1];
        for (int d = 0; d < kMaxRank; ++d) l.push_u(d < static_cast<int>(v.size()) ? v[d] : 0);
      }
    }
    set_grid(l, caps, (count + 255) / 256);
    launch(ctx, std::move(l));
  }
}

std::string binary_supports(const KernelContext& ctx) {
  const Tensor& a = ctx.in(0);
  const Tensor& b = ctx.in(1);
  if (auto why = numeric_ok(ctx, a.dtype()); !why.empty()) return why;
  if (a.dtype() != b.dtype()) return "operands have different dtypes";
  bool same_shape = a.shape() == b.shape();
  if (!same_shape) {
    if (auto why = fits_bindings(ctx); !why.empty()) return why + " (and the operands broadcast)";
    Shape out = a.rank() >= b.rank() ? a.shape() : b.shape();
    // Output shape of a broadcast: the larger of each aligned pair.
    size_t r = std::max(a.shape().size(), b.shape().size());
    out.assign(r, 1);
    for (size_t j = 0; j < r; ++j) {
      int64_t da = j < a.shape().size() ? a.shape()[a.shape().size() - 1 - j] : 1;
      int64_t db = j < b.shape().size() ? b.shape()[b.shape().size() - 1 - j] : 1;
      out[r - 1 - j] = da == 1 ? db : da;
    }
    size_t out_bytes = static_cast<size_t>(shape_numel(out)) * dtype_size(a.dtype());
    if (out_bytes > device_caps(ctx).max_storage_range)
      return str("the broadcast output has ", out_bytes, " bytes, more than maxStorageBufferRange (",
                 device_caps(ctx).max_storage_range, ")");
    if (broadcast_map(out, {a.shape(), b.shape()}).shape.size() > static_cast<size_t>(kMaxRank))
      return str("broadcast needs more than ", kMaxRank, " axes after merging");
  }
  return "";
}

}  // namespace porta::vk
