// ScaledDotProductAttention (ai.porta) on vulkan: scaled_dot_product_attention.comp, fused
// with a streaming softmax (one workgroup per 16 queries of a head; nothing of size Sq x Skv
// in device memory); on CPU-like devices first sdpa_rows.comp (one invocation per query row).
// f32. Declines D or Dv above 128 (the shader's shared tiles), and tensors beyond one binding;
// the composite then runs. Under a driver's cap on loop iterations per
// invocation (lavapipe) a long key sequence is split over dispatches (sdpa_loops).
#include <algorithm>
#include <cmath>

#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/attention_util.hpp"

namespace porta::vk {
namespace {

constexpr int64_t kMaxHeadDim = 128;  // MAX_D of the shader
constexpr int64_t kQueryBlock = 16;   // BQ of the shader
constexpr int64_t kKeyBlock = 16;     // BK of the shader

// Upper bound of the loop iterations one invocation of the shader runs (vk_kernel.hpp's count:
// a loop costs its iterations + 1, a barrier 1; the constant 8- and 16-trip loops are counted
// though the compiler may unroll them), with ceil16(n) = (n + 15) / 16:
//   once:      Q staging ceil16(D) + 1, accumulator init 9, the key loop's exit 1, the last
//              barrier 1, the output (or state) store 9                      = ceil16(D) + 21
//   per key tile of 16: its back-edge 1, 4 barriers, K and V staging ceil16(D) + 1 and
//              ceil16(Dv) + 1, the score's dot product D + 1, the softmax row's two loops 2*17,
//              the rescale 9, the P V loop 17 + 16*9        = D + ceil16(D) + ceil16(Dv) + 213
// Lavapipe (57344 after the margin): 201 key tiles (3216 keys) per dispatch at D = Dv = 64,
// 160 (2560 keys) at D = Dv = 128.
struct SdpaLoops {
  uint64_t once, per_tile;
};
SdpaLoops sdpa_loops(int64_t d, int64_t dv) {
  uint64_t cd = static_cast<uint64_t>((d + 15) / 16), cdv = static_cast<uint64_t>((dv + 15) / 16);
  return {cd + 21, static_cast<uint64_t>(d) + cd + cdv + 213};
}

// Key tiles one dispatch may walk under the cap (INT64_MAX: no cap; 0: not even one).
int64_t key_tiles_per_dispatch(const KernelContext& ctx, int64_t d, int64_t dv) {
  SdpaLoops loops = sdpa_loops(d, dv);
  uint64_t limit = loop_limit(ctx);
  if (limit == UINT64_MAX) return INT64_MAX;
  if (limit < loops.once + loops.per_tile) return 0;
  return static_cast<int64_t>((limit - loops.once) / loops.per_tile);
}

void sdpa_vulkan(KernelContext& ctx) {
  const Shape &qs = ctx.in(0).shape(), &ks = ctx.in(1).shape(), &vs = ctx.in(2).shape();
  int64_t B = qs[0], H = qs[1], Sq = qs[2], D = qs[3], Skv = ks[2], Dv = vs[3];
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  bool has_mask = ctx.has_input(3);
  double scale = ctx.attrs->has("scale") ? ctx.attrs->get_float("scale") : 1.0 / std::sqrt(static_cast<double>(D));
  int64_t q_blocks = (Sq + kQueryBlock - 1) / kQueryBlock, groups = B * H * q_blocks;
  Launch l;
  l.shader = "scaled_dot_product_attention";
  l.spec = {ctx.attrs->get_int("causal") != 0 ? 1 : 0, has_mask ? 1 : 0};
  // Without a mask its binding is never read; Q stands in for it.
  l.args = {input(ctx.in(0)), input(ctx.in(1)), input(ctx.in(2)), input(has_mask ? ctx.in(3) : ctx.in(0)),
            output(y)};
  for (int64_t v : {H, Sq, Skv, D, Dv, q_blocks, groups}) l.push_u(v);
  l.push_f(scale);
  for (int64_t s : opdef::attention_mask_strides(ctx)) l.push_u(s);
  set_grid(l, device_caps(ctx), groups);
  int64_t per = key_tiles_per_dispatch(ctx, D, Dv), tiles = (Skv + kKeyBlock - 1) / kKeyBlock;
  if (per < 1) throw BackendError("[ScaledDotProductAttention] one key tile exceeds the loop cap (supports should decline)");
  if (tiles <= per) {  // one dispatch; Q stands in for the unused State binding
    l.args.push_back(input(ctx.in(0)));
    l.push_u(0);
    l.push_u(Skv);
    launch(ctx, std::move(l));
    return;
  }
  // Running max, sum and accumulators per query row between dispatches.
  Tensor state = Tensor::empty({groups * kQueryBlock * (Dv + 2)}, DType::f32, ctx.device);
  l.args.push_back(output(state));
  for (int64_t begin = 0; begin < Skv; begin += per * kKeyBlock) {
    Launch d = l;
    d.push_u(begin);
    d.push_u(std::min(Skv, begin + per * kKeyBlock));
    launch(ctx, std::move(d));
  }
}

std::string sdpa_supports(const KernelContext& ctx) {
  int64_t d = ctx.in(0).shape()[3], dv = ctx.in(2).shape()[3];
  if (auto why = opdef::attention_heads_fit(ctx, kMaxHeadDim,
                                             "the fused kernel keeps Q, K and V tiles of up to 128 columns in shared memory");
      !why.empty())
    return why;
  if (device_caps(ctx).shared_memory < 26 * 1024)
    return str("the device has ", device_caps(ctx).shared_memory, " bytes of shared memory, the kernel needs 26 KiB");
  int64_t per = key_tiles_per_dispatch(ctx, d, dv);
  if (per < 1) {
    SdpaLoops loops = sdpa_loops(d, dv);
    return loop_budget_ok(ctx, loops.once + loops.per_tile, str("one tile of 16 keys (D = ", d, ", Dv = ", dv, ")"));
  }
  // A key sequence split over dispatches keeps the running state in an fp32 scratch.
  const Shape& qs = ctx.in(0).shape();
  int64_t skv = ctx.in(1).shape()[2];
  int64_t rows = qs[0] * qs[1] * ((qs[2] + kQueryBlock - 1) / kQueryBlock) * kQueryBlock;
  uint64_t state = (skv + kKeyBlock - 1) / kKeyBlock <= per ? 0 : static_cast<uint64_t>(rows * (dv + 2)) * 4;
  if (state > device_caps(ctx).max_storage_range)
    return str("the attention state between dispatches (loop cap) needs ", state,
               " bytes, more than the device's maxStorageBufferRange");
  return fits_bindings(ctx);
}

// ---- "rows": one invocation per query row (sdpa_rows.comp), for CPU-like devices --------------

// Loop iterations of one invocation (vk_kernel.hpp's count): Q and accumulator loads D4 + 1 and
// DV4 + 1, per key its back-edge, the dot product D4 + 1, a rescale DV4 + 1 and the weighted
// add DV4 + 1, the loop's exit and the store DV4 + 1.
uint64_t sdpa_rows_loops(int64_t skv, int64_t d, int64_t dv) {
  const uint64_t d4 = static_cast<uint64_t>(d / 4), dv4 = static_cast<uint64_t>(dv / 4);
  return d4 + 2 * dv4 + 4 + static_cast<uint64_t>(skv) * (d4 + 2 * dv4 + 4);
}

// Whether `t` is a 4-D f32 tensor of rows of whole vec4s: its last axis dense, the other
// axes' strides multiples of 4 (what sdpa_rows.comp reads and writes at strides).
bool vec4_rows(const Tensor& t) {
  const Shape& shape = t.shape();
  const std::vector<int64_t>& strides = t.strides();
  if (shape.size() != 4 || t.dtype() != DType::f32) return false;
  if (shape[3] > 1 && strides[3] != 1) return false;
  for (size_t i = 0; i < 3; ++i)
    if (shape[i] > 1 && (strides[i] < 0 || strides[i] % 4 != 0)) return false;
  return true;
}

// Whether sdpa_rows.comp reads Q, K or V `t` where it lies: vec4 rows, the offset on the
// device's texel alignment, the elements it spans within one texel binding.
bool rows_view_ok(const KernelContext& ctx, const Tensor& t) {
  const DeviceCaps& caps = device_caps(ctx);
  return vec4_rows(t) && static_cast<uint64_t>(t.offset()) * 4 % std::max<uint64_t>(caps.texel_alignment, 16) == 0 &&
         static_cast<uint64_t>((view_span(t) + 3) / 4) <= caps.max_texels;
}

// Whether sdpa_rows.comp writes Y `t` where it lies: vec4 rows, the start on the storage
// alignment, the span within one binding.
bool rows_output_ok(const KernelContext& ctx, const Tensor& t) {
  const DeviceCaps& caps = device_caps(ctx);
  return vec4_rows(t) && static_cast<uint64_t>(t.offset()) * 4 % std::max<uint64_t>(caps.storage_alignment, 16) == 0 &&
         static_cast<uint64_t>(view_span(t)) * 4 <= binding_limit(ctx);
}

// Texels per b, h and row of Q, K or V as bound (0 on axes of one).
void push_row_strides(Launch& l, const Tensor& t) {
  for (size_t i = 0; i < 3; ++i) l.push_u(t.shape()[i] > 1 ? t.strides()[i] / 4 : 0);
}

void sdpa_rows_vulkan(KernelContext& ctx) {
  // Q, K and V are read where they lie when rows_view_ok (a session's head splits); other
  // non-contiguous inputs, and any mask, are copied first.
  contiguous_inputs_unless(ctx, [&](size_t i, const Tensor& t) { return i < 3 && rows_view_ok(ctx, t); });
  const Shape &qs = ctx.in(0).shape(), &ks = ctx.in(1).shape(), &vs = ctx.in(2).shape();
  const int64_t B = qs[0], H = qs[1], Sq = qs[2], D = qs[3], Skv = ks[2], Dv = vs[3];
  if (ctx.out(0).numel() == 0) return;
  // Y is written where it lies when rows_output_ok (a session's head merge); any other
  // non-contiguous Y gets the result through a contiguous one.
  Tensor& given = ctx.out(0);
  const bool direct = given.is_contiguous() || rows_output_ok(ctx, given);
  Tensor y = direct ? given : Tensor::empty(given.shape(), DType::f32, ctx.device);
  const bool has_mask = ctx.has_input(3);
  const double scale =
      ctx.attrs->has("scale") ? ctx.attrs->get_float("scale") : 1.0 / std::sqrt(static_cast<double>(D));
  const uint64_t rows = static_cast<uint64_t>(B * H * Sq);
  Launch l;
  l.shader = "sdpa_rows";
  l.spec = {ctx.attrs->get_int("causal") != 0 ? 1 : 0, has_mask ? 1 : 0, static_cast<int32_t>(D / 4),
            static_cast<int32_t>(Dv / 4)};
  l.local_size = 64;
  auto view = [&](size_t i) {
    Arg a = texels(ctx.in(i));
    a.bytes = static_cast<size_t>(view_span(ctx.in(i))) * 4;
    return a;
  };
  Arg dst = output(y);
  dst.bytes = static_cast<size_t>(view_span(y)) * 4;
  l.args = {view(0), view(1), view(2), has_mask ? scalar_texels(ctx.in(3)) : view(0), dst};
  l.push_u(rows);
  for (int64_t v : {H, Sq, Skv}) l.push_u(v);
  l.push_f(scale);
  std::vector<int64_t> strides = has_mask ? opdef::attention_mask_strides(ctx) : std::vector<int64_t>(4, 0);
  for (int64_t st : strides) l.push_u(st);
  for (size_t i = 0; i < 3; ++i) push_row_strides(l, ctx.in(i));
  push_row_strides(l, y);
  set_grid(l, device_caps(ctx), (rows + 63) / 64);
  launch(ctx, std::move(l));
  if (!direct) given.copy_(y);
}

std::string sdpa_rows_supports(const KernelContext& ctx) {
  if (auto why = float_texels_ok(ctx, DType::f32, "the workgroup kernel with shared tiles"); !why.empty()) return why;
  const int64_t d = ctx.in(0).shape()[3], dv = ctx.in(2).shape()[3], skv = ctx.in(1).shape()[2];
  if (auto why = opdef::attention_heads_fit(ctx, kMaxHeadDim, "a query row's Q and accumulators stay in registers");
      !why.empty())
    return why;
  if (d % 4 != 0 || dv % 4 != 0 || d == 0 || dv == 0)
    return str("D = ", d, " and Dv = ", dv, " are not both positive multiples of 4 (rows are read as vec4 texels)");
  if (skv == 0) return "no keys (the workgroup kernel writes the empty sums)";
  const uint64_t max_texels = device_caps(ctx).max_texels;
  for (int i = 0; i < 3; ++i)
    if (static_cast<uint64_t>(ctx.in(i).numel() / 4) > max_texels)
      return str("input ", i, " has more texels than the device's maxTexelBufferElements (", max_texels, ")");
  if (ctx.has_input(3))
    if (auto why = scalar_texels_ok(ctx, ctx.in(3)); !why.empty()) return why;
  if (auto why = loop_budget_ok(ctx, sdpa_rows_loops(skv, d, dv), str("a query row over ", skv, " keys"));
      !why.empty())
    return why;
  return fits_bindings(ctx);
}

}  // namespace

const bool sdpa_rows_registered = [] {
  KernelDef k;
  k.op = "ScaledDotProductAttention";
  k.backend = DeviceType::vulkan;
  k.impl = {"rows", 10};
  k.dtypes = kF32;
  k.fn = sdpa_rows_vulkan;
  k.supports = sdpa_rows_supports;
  k.strided_inputs = true;
  k.reads_view = [](const KernelContext& ctx, size_t i) { return i < 3 && rows_view_ok(ctx, ctx.in(i)); };
  k.writes_view = [](const KernelContext& ctx, size_t i) { return i == 0 && rows_output_ok(ctx, ctx.outputs.at(0)); };
  return register_kernel_at_load(std::move(k));
}();
PORTA_REGISTER_KERNEL(ScaledDotProductAttention, vulkan, kF32, sdpa_vulkan, sdpa_supports)

}  // namespace porta::vk
