// MaxPool and AveragePool on cpu. f32 values in the channels-last layout on both sides run
// porta's loop over pixel rows (kernels/cpu/pool_channels_last.hpp); other f32 calls run oneDNN's
// pooling_v2 (dilations supported); the end padding handed to oneDNN is what the output size
// needs, which covers ceil_mode. Own plain loop where oneDNN does not fit: f64, MaxPool on
// i8/u8, the Indices output, and count_include_pad with ceil_mode windows reaching past the
// declared pads (PyTorch does not count those taps; oneDNN would).
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/pool_channels_last.hpp"
#include "ops/pool.hpp"

namespace porta::cpu {
namespace {

template <typename T>
void pool_loop(KernelContext& ctx, const opdef::WindowGeometry& g, bool max) {
  const Tensor& xt = ctx.in(0);
  size_t n = g.spatial();
  bool include_pad = !max && ctx.attrs->get_int("count_include_pad", 0) != 0;
  bool column_major = max && ctx.attrs->get_int("storage_order", 0) != 0;
  int64_t planes = xt.dim(0) * xt.dim(1), isize = shape_numel(g.in), osize = shape_numel(g.out);
  int64_t ksize = shape_numel(g.kernel);
  const T* x = xt.data<T>();
  T* y = ctx.out(0).data<T>();
  int64_t* idx = ctx.outputs.size() > 1 && ctx.out(1).defined() ? ctx.out(1).data<int64_t>() : nullptr;
  parallel_for(planes * osize, 256, [&](int64_t r0, int64_t r1) {
    std::vector<int64_t> o(n), at(n);
    for (int64_t r = r0; r < r1; ++r) {
      int64_t p = r / osize, oi = r % osize;
      for (size_t i = n, rem = oi; i-- > 0; rem /= g.out[i]) o[i] = static_cast<int64_t>(rem) % g.out[i];
      double acc = max ? -INFINITY : 0.0;
      int64_t best = -1;
      for (int64_t ki = 0; ki < ksize; ++ki) {
        bool inside = true;
        int64_t flat = 0;
        for (size_t i = n, rem = ki; i-- > 0; rem /= g.kernel[i]) {
          at[i] = o[i] * g.strides[i] - g.pad_begin[i] + (static_cast<int64_t>(rem) % g.kernel[i]) * g.dilations[i];
          inside &= at[i] >= 0 && at[i] < g.in[i];
        }
        if (!inside) continue;
        for (size_t i = 0; i < n; ++i) flat = flat * g.in[i] + at[i];
        double v = static_cast<double>(x[p * isize + flat]);
        if (!max) {
          acc += v;
        } else if (v > acc || best < 0) {
          acc = v;
          if (column_major) {
            flat = 0;
            for (size_t i = n; i-- > 0;) flat = flat * g.in[i] + at[i];
          }
          best = p * isize + flat;
        }
      }
      if (!max) {
        int64_t taps = 1;
        for (size_t i = 0; i < n; ++i) taps *= opdef::pool_taps(g, i, o[i], include_pad);
        acc /= static_cast<double>(taps);
      }
      // No tap inside the input (not produced by valid geometry): -inf, or an integer type's
      // lowest value (-inf has no integer conversion).
      if constexpr (std::is_integral_v<T>)
        if (best < 0) acc = static_cast<double>(std::numeric_limits<T>::lowest());
      y[r] = static_cast<T>(acc);
      if (idx) idx[r] = best;
    }
  });
}

using PoolPrimitive = MaybePrimitive<dnnl::pooling_v2_forward>;

// A pooling call prepared once per session step (KernelContext::state): porta's channels-last
// loop with its geometry, or oneDNN's primitive with its memory objects when it writes y as
// stored, so a call neither reads attributes nor builds keys (those were as long as the pooling
// itself on Inception's 7x7 and 3x3 images).
struct PreparedPool {
  Shape x_shape, y_shape;
  std::optional<ChannelsLastPool> own;
  dnnl::primitive prim;
  dnnl::memory src, dst;
  std::unordered_map<int, dnnl::memory> args;

  bool fits(const Tensor& x, const Tensor& y) const { return x.shape() == x_shape && y.shape() == y_shape; }
  void run(const void* x, void* y) {
    if (own) return pool_channels_last_f32(static_cast<const float*>(x), static_cast<float*>(y), *own);
    src.set_data_handle(const_cast<void*>(x));
    dst.set_data_handle(y);
    execute(prim, args);
  }
};

// Runs oneDNN's pooling; false when oneDNN refuses the geometry (the caller loops instead).
// The primitive works in x's stored layout on both sides (oneDNN's jit pooling wants src and
// dst alike; on nhwc it vectorizes across channels); a y stored differently is reordered from
// a scratch copy.
bool pool_dnnl(KernelContext& ctx, const opdef::WindowGeometry& g, bool max, bool include_pad, LayoutSides layout) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> dil, pad_end;
  for (size_t i = 0; i < g.spatial(); ++i) {
    dil.push_back(g.dilations[i] - 1);
    pad_end.push_back((g.out[i] - 1) * g.strides[i] + (g.kernel[i] - 1) * g.dilations[i] + 1 - g.in[i] - g.pad_begin[i]);
  }
  auto alg = max ? dnnl::algorithm::pooling_max
                 : include_pad ? dnnl::algorithm::pooling_avg_include_padding : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::memory::desc src_desc = stored_desc(x.shape(), layout.input(0));
  bool src_blocked = src_desc != plain_desc(x.shape(), DType::f32);
  auto p = cached<PoolPrimitive>(dnn_key("pool", static_cast<int>(alg), x.shape(), y.shape(), g.kernel, g.strides, dil,
                                         g.pad_begin, pad_end, src_blocked), [&] {
    auto r = std::make_shared<PoolPrimitive>();
    try {
      dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, src_desc,
                                       stored_desc(y.shape(), src_blocked), dims_of(g.strides), dims_of(g.kernel),
                                       dims_of(dil), dims_of(g.pad_begin), dims_of(pad_end));
      r->pd = dnnl::pooling_v2_forward::primitive_desc(d, engine());
      r->prim = dnnl::pooling_v2_forward(r->pd);
      r->ok = true;
    } catch (const dnnl::error& e) {
      r->why = e.what();
    }
    return r;
  });
  if (!p->ok) return false;
  dnnl::memory stored_dst = wrap_ptr(stored_desc(y.shape(), layout.output), y.raw_data());
  dnnl::memory dst = p->pd.dst_desc() == stored_dst.get_desc() ? stored_dst : dnnl::memory(p->pd.dst_desc(), engine());
  execute(p->prim, {{DNNL_ARG_SRC, wrap_ptr(p->pd.src_desc(), x.raw_data())}, {DNNL_ARG_DST, dst}});
  reorder_into(dst, stored_dst);
  if (dst.get_desc() == stored_dst.get_desc()) {
    auto pp = std::make_shared<PreparedPool>();
    pp->x_shape = x.shape();
    pp->y_shape = y.shape();
    pp->prim = p->prim;
    pp->src = dnnl::memory(p->pd.src_desc(), engine(), const_cast<void*>(x.raw_data()));
    pp->dst = dnnl::memory(p->pd.dst_desc(), engine(), y.raw_data());
    pp->args = {{DNNL_ARG_SRC, pp->src}, {DNNL_ARG_DST, pp->dst}};
    ctx.state = pp;
  }
  return true;
}

// Reorders between a tensor as stored (`blocked`: channels-last per activation_layout) and its
// plain copy.
void restore_plain(const Tensor& stored, bool blocked, Tensor& plain) {
  reorder_into(wrap_ptr(stored_desc(stored.shape(), blocked), stored.raw_data()),
               wrap_ptr(plain_desc(plain.shape(), DType::f32), plain.raw_data()));
}
void store_from_plain(const Tensor& plain, Tensor& stored, bool blocked) {
  reorder_into(wrap_ptr(plain_desc(plain.shape(), DType::f32), plain.raw_data()),
               wrap_ptr(stored_desc(stored.shape(), blocked), stored.raw_data()));
}

void pool_cpu(KernelContext& ctx, bool max) {
  if (ctx.out(0).numel() == 0) return;
  // A step prepared by its first call (the choice below depends only on what a step fixes:
  // shapes, dtype, attributes, outputs and their layouts).
  if (auto* pp = static_cast<PreparedPool*>(ctx.state.get()); pp && pp->fits(ctx.in(0), ctx.out(0)))
    return pp->run(ctx.in(0).raw_data(), ctx.out(0).raw_data());
  opdef::WindowGeometry g = opdef::pool_geometry(ctx.op->name, ctx.in(0).shape(), *ctx.attrs);
  bool include_pad = !max && ctx.attrs->get_int("count_include_pad") != 0;
  bool wants_indices = ctx.outputs.size() > 1 && ctx.out(1).defined();
  bool past_pads = false;  // a ceil_mode window reaches beyond the declared end padding
  for (size_t i = 0; i < g.spatial(); ++i)
    past_pads |= (g.out[i] - 1) * g.strides[i] + (g.kernel[i] - 1) * g.dilations[i] + 1 > g.in[i] + g.pad_begin[i] + g.pad_end[i];
  bool loop = ctx.in(0).dtype() != DType::f32 || wants_indices || (include_pad && past_pads);
  LayoutSides layout = activation_layout(*ctx.attrs);
  // Channels-last on both sides (a CNN's pools between convs): porta's loop, any geometry.
  if (ctx.in(0).dtype() == DType::f32 && !wants_indices && layout.input(0) && layout.output &&
      channels_last_tag(ctx.in(0).shape()) != dnnl::memory::format_tag::undef) {
    auto pp = std::make_shared<PreparedPool>();
    pp->x_shape = ctx.in(0).shape();
    pp->y_shape = ctx.out(0).shape();
    pp->own.emplace(g, ctx.in(0).dim(0), ctx.in(0).dim(1), max, include_pad);
    ctx.state = pp;
    return pp->run(ctx.in(0).raw_data(), ctx.out(0).raw_data());
  }
  if (!loop && pool_dnnl(ctx, g, max, include_pad, layout)) return;
  if (layout.any()) {
    // Channels-last activations (f32 only, set by the session) where oneDNN refused the geometry:
    // loop over plain copies.
    if (ctx.in(0).dtype() != DType::f32 || wants_indices)
      throw BackendError(str("[", ctx.op->name, "] internal: blocked layout on a call oneDNN cannot run"));
    KernelContext plain = ctx;
    plain.inputs[0] = Tensor::empty(ctx.in(0).shape(), DType::f32);
    plain.outputs[0] = Tensor::empty(ctx.out(0).shape(), DType::f32);
    restore_plain(ctx.in(0), layout.input(0), plain.inputs[0]);
    pool_loop<float>(plain, g, max);
    store_from_plain(plain.outputs[0], ctx.out(0), layout.output);
    return;
  }
  visit_dtype(ctx.in(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    constexpr bool is_float = std::is_same_v<T, float> || std::is_same_v<T, double>;
    constexpr bool is_8bit = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>;
    if constexpr (is_float || is_8bit) {
      if (is_float || max) return pool_loop<T>(ctx, g, max);
    }
    throw DTypeError(str("[", ctx.op->name, "] cpu kernel takes f32 or f64", max ? ", i8 or u8" : "", ", got ",
                         dtype_name(ctx.in(0).dtype())));
  });
}

void max_pool_cpu(KernelContext& ctx) { pool_cpu(ctx, true); }

KernelDef::LayoutUse pool_layout_use(const KernelContext& call) {
  bool ok = call.in(0).dtype() == DType::f32 && (call.outputs.size() < 2 || !call.outputs[1].defined());
  return {ok ? 1u : 0u, ok};
}
void average_pool_cpu(KernelContext& ctx) { pool_cpu(ctx, false); }

}  // namespace

// MaxPool and AveragePool read and write oneDNN's channels-last layout (kernels/cpu/dnn_layout.hpp)
// for f32 calls without the Indices output.
namespace {
const bool max_pool_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "MaxPool";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32 | kF64 | kI8 | kU8;
  k.fn = max_pool_cpu;
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = pool_layout_use;
  return k;
}());
const bool average_pool_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "AveragePool";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32 | kF64;
  k.fn = average_pool_cpu;
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = pool_layout_use;
  return k;
}());
}  // namespace

}  // namespace porta::cpu
