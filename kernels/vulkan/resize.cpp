// Resize on vulkan: the host plan (ops/resize_util.hpp: per-axis source offsets and weights,
// computed in double exactly as the reference does, adjacent untouched axes merged) goes to
// the device as small tables, uploaded once per session step while they stay the same
// (ctx.state), and a shader sums each output element's taps. Reading the scales input (when
// given; sizes are in the output shape) copies it to the host.
//
// Two implementations, tried in this order:
//  - "planes" (resize_planes.comp): the plan as [planes, rows, cols] with at most the last
//    two axes resized (images: N x C planes, H and W resized), the taps of both unrolled and
//    every read a one-element texel fetch;
//  - "taps" (resize.comp): any plan (trilinear 5-D, a resized channel axis, tf_crop_and_resize's
//    extrapolation), looping over every combination of the resized axes' taps.
#include <algorithm>
#include <memory>
#include <optional>

#include "kernels/vulkan/vk_kernel.hpp"
#include "ops/resize_util.hpp"

namespace porta::vk {
namespace {

// Device copies of a step's tables (index and weight per axis group), reused while the host
// tables stay equal.
struct Tables {
  std::vector<std::vector<int32_t>> index;
  std::vector<std::vector<float>> weight;
  std::vector<Tensor> dev_index, dev_weight;
};

const Tables& device_tables(KernelContext& ctx, std::vector<std::vector<int32_t>> index,
                            std::vector<std::vector<float>> weight) {
  for (size_t k = 0; k < index.size(); ++k)
    if (index[k].empty()) {  // every axis untouched: bind a one-entry table nothing reads
      index[k].push_back(0);
      weight[k].push_back(0.0f);
    }
  auto* cached = static_cast<Tables*>(ctx.state.get());
  if (cached && cached->index == index && cached->weight == weight) return *cached;
  auto t = std::make_shared<Tables>();
  for (size_t k = 0; k < index.size(); ++k) {
    const int64_t entries = static_cast<int64_t>(index[k].size());
    t->dev_index.push_back(Tensor::from_host(index[k].data(), {entries}, DType::i32, ctx.device));
    t->dev_weight.push_back(Tensor::from_host(weight[k].data(), {entries}, DType::f32, ctx.device));
  }
  t->index = std::move(index);
  t->weight = std::move(weight);
  ctx.state = std::move(t);
  return *static_cast<Tables*>(ctx.state.get());
}

void resize_taps(KernelContext& ctx, const opdef::ResizePlan& p) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const int rank = static_cast<int>(p.axes.size());
  if (rank > kMaxRank)
    throw Unsupported(str("[Resize] vulkan kernel expected at most ", kMaxRank, " axes after merging, got ", rank));
  const Tables& t = device_tables(ctx, {std::vector<int32_t>(p.index.begin(), p.index.end())},
                                  {std::vector<float>(p.weight.begin(), p.weight.end())});
  Launch l;
  l.shader = "resize";
  l.variant = variant_for(x.dtype());
  l.args = {input(x), input(t.dev_index[0]), input(t.dev_weight[0]), output(y)};
  l.push_u(static_cast<uint64_t>(y.numel()));
  l.push_i(rank);
  l.push_u(static_cast<uint64_t>(p.combos));
  l.push_f(p.extrapolation);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].out : 1);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].in_stride : 0);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].taps : 0);
  for (int k = 0; k < kMaxRank; ++k) l.push_i(k < rank ? p.axes[k].table_offset : 0);
  set_grid(l, device_caps(ctx), (static_cast<uint64_t>(y.numel()) + 255) / 256);
  launch(ctx, std::move(l));
}

void resize_taps_vulkan(KernelContext& ctx) {
  if (ctx.out(0).numel() == 0) return;
  resize_taps(ctx, opdef::resize_plan(ctx));
}

// The plan as [planes, rows, cols], when at most its last two axes are resized and no output
// takes the extrapolation value: rows and cols each become a table of `taps` (offset, weight)
// entries per output coordinate (an untouched axis one tap of weight 1); the column table
// runs on to a whole number of quads with zero-weight taps of offset 0.
struct PlanesForm {
  int64_t planes = 1, plane_stride = 0, rows = 1, cols = 1;
  int ty = 1, tx = 1;
  std::vector<int32_t> row_index, col_index;
  std::vector<float> row_weight, col_weight;
};

std::optional<PlanesForm> planes_form(const opdef::ResizePlan& p) {
  const size_t r = p.axes.size();
  if (r == 0 || r > 3 || (r == 3 && p.axes[0].taps != 0)) return std::nullopt;
  for (int64_t v : p.index)
    if (v < 0) return std::nullopt;  // tf_crop_and_resize's extrapolation value
  PlanesForm f;
  if (r == 3) f.planes = p.axes[0].out, f.plane_stride = p.axes[0].in_stride;
  using Axis = opdef::ResizePlan::Axis;
  const Axis none{1, 0, 0, 0};
  const Axis& rows = r >= 2 ? p.axes[r - 2] : none;
  const Axis& cols = p.axes[r - 1];
  auto table = [&](const Axis& a, int64_t coords, int& taps, std::vector<int32_t>& index, std::vector<float>& weight) {
    taps = a.taps == 0 ? 1 : a.taps;
    for (int64_t o = 0; o < coords; ++o)
      for (int k = 0; k < taps; ++k) {
        if (o >= a.out) {
          index.push_back(0);
          weight.push_back(0.0f);
        } else if (a.taps == 0) {
          index.push_back(static_cast<int32_t>(o * a.in_stride));
          weight.push_back(1.0f);
        } else {
          size_t e = static_cast<size_t>(a.table_offset + o * a.taps + k);
          index.push_back(static_cast<int32_t>(p.index[e]));
          weight.push_back(static_cast<float>(p.weight[e]));
        }
      }
  };
  f.rows = rows.out, f.cols = cols.out;
  table(rows, rows.out, f.ty, f.row_index, f.row_weight);
  table(cols, (cols.out + 3) / 4 * 4, f.tx, f.col_index, f.col_weight);
  return f;
}

void resize_planes_vulkan(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  opdef::ResizePlan p = opdef::resize_plan(ctx);
  std::optional<PlanesForm> f = planes_form(p);
  // `supports` checks the plan's form where it can read the scales or sizes when the kernel is
  // chosen; a plan of another form it could not see (more than the last two axes resized) goes
  // to "taps", whose conditions it checked too.
  if (!f) return resize_taps(ctx, p);
  const Tables& t = device_tables(ctx, {std::move(f->row_index), std::move(f->col_index)},
                                  {std::move(f->row_weight), std::move(f->col_weight)});
  const uint64_t quads = static_cast<uint64_t>((f->cols + 3) / 4);
  const uint64_t total = static_cast<uint64_t>(f->planes * f->rows) * quads;
  Launch l;
  l.shader = "resize_planes";
  l.variant = variant_for(x.dtype());
  l.spec = {f->ty, f->tx, total < kDiv21Bound ? 1 : 0};
  l.local_size = 64;
  l.args = {scalar_texels(x),         scalar_texel_bits(t.dev_index[0]), scalar_texels(t.dev_weight[0]),
            texel_bits(t.dev_index[1]), texels(t.dev_weight[1]),         output(y)};
  l.push_u(total);
  l.push_u(quads);
  l.push_u(static_cast<uint64_t>(f->rows));
  l.push_u(static_cast<uint64_t>(f->cols));
  l.push_u(static_cast<uint64_t>(f->plane_stride));
  set_grid(l, device_caps(ctx), (total + 63) / 64);
  launch(ctx, std::move(l));
}

std::string resize_taps_supports(const KernelContext& ctx) {
  const int rank = ctx.in(0).rank();
  if (rank > kMaxRank) return str("rank ", rank, " is above the shader's ", kMaxRank);
  if (auto why = fp16_ok(ctx, ctx.in(0).dtype()); !why.empty()) return why;
  // Loop iterations of one invocation, at most: the coordinate loop, then every combination
  // of taps (nearest 1, linear 2, cubic 4 per resized axis) with its axis loop.
  std::string mode = ctx.attrs->get_string("mode", "nearest");
  uint64_t taps = mode == "cubic" ? 4 : mode == "linear" ? 2 : 1, combos = 1;
  for (int k = 0; k < rank; ++k) combos *= taps;
  uint64_t iterations = static_cast<uint64_t>(rank + 1) + combos * static_cast<uint64_t>(rank + 2) + 1;
  if (auto why = loop_budget_ok(ctx, iterations, "the taps of " + mode + " interpolation"); !why.empty())
    return why;
  return fits_bindings(ctx);
}

std::string resize_planes_supports(const KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (auto why = fp16_ok(ctx, x.dtype()); !why.empty()) return why;
  if (auto why = scalar_texels_ok(ctx, x); !why.empty()) return why;
  const DeviceCaps& caps = device_caps(ctx);
  if (!caps.texel_r32ui || !caps.texel_rgba32ui || !caps.texel_rgba32f)
    return "the device lacks R32UI, RGBA32UI or RGBA32F uniform texel buffers (for the tables)";
  if (ctx.attrs->get_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    return "tf_crop_and_resize (its extrapolation value)";
  try {
    opdef::ResizePlan p = opdef::resize_plan(ctx);
    std::optional<PlanesForm> f = planes_form(p);
    if (!f) return str("a resized axis before the last two (", p.axes.size(), " axes after merging)");
    if (std::max(f->row_index.size(), f->col_index.size()) > caps.max_texels)
      return "its tables exceed maxTexelBufferElements";
    const uint64_t total = static_cast<uint64_t>(f->planes * f->rows) * static_cast<uint64_t>((f->cols + 3) / 4);
    if (total >= (uint64_t{1} << 31)) return "2^31 or more outputs";
    if (auto why = grid_ok(ctx, (total + 63) / 64, "the outputs"); !why.empty()) return why;
  } catch (const Error&) {
    // Scales or sizes not readable yet, or invalid: the call computes the plan again, reports
    // what is wrong, and hands a plan of another form to "taps".
  }
  // What "planes" hands to "taps" must suit it too.
  return resize_taps_supports(ctx);
}

}  // namespace

PORTA_REGISTER_KERNEL(Resize, vulkan, kF32 | kF16, resize_planes_vulkan, resize_planes_supports,
                      (KernelImpl{"planes", 1}))
PORTA_REGISTER_KERNEL(Resize, vulkan, kF32 | kF16, resize_taps_vulkan, resize_taps_supports, (KernelImpl{"taps", 0}))

}  // namespace porta::vk
