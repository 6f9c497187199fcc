// Conv on cpu over small output maps ("small_map"): the last stages of CNNs at small images,
// where a conv has a few output pixels (2x2, 4x4) against its weights. Such a conv does a
// handful of multiply-adds per weight read, so its time is the time to stream the weights;
// oneDNN's direct kernels read them well below the memory bandwidth there (resnet18's
// 512-channel 3x3 convs over 2x2 pixels at 64x64 images: 412-419 us each for 9.4 MB, 23 GB/s,
// on a machine that streams 30-40 GB/s from one core), and spend more than their
// multiply-adds' worth on small ones.
//
// The kernel packs the weights once per session into panels of 32 output channels, each a
// K x 32 block read front to back (K = input channels x the taps that read the input), gathers
// the few pixels' input patches (im2col: rows x K floats, in cache) and multiplies them by the
// panels (panels.hpp: up to 12 pixels x 32 channels of sums in registers per pass with
// AVX-512, 6 x 16 with AVX2). The bias, a fused residual and the
// fused activation are applied to the sums before they are stored, in either of the layouts a
// session keeps activations in (plain or oneDNN's channels-last).
//
// A call computing in bf16 inside (a bf16 session's porta_compute) runs the bf16 panels
// (panels.hpp, AVX-512 BF16): the weights rounded once into bf16 panels in the same tap order,
// the patches rounded per call, f32 sums finished as above. Tap by tap stays f32 only.
//
// A dilated conv whose taps mostly read padding (fcn_resnet50's last stage at 64x64 images: a
// 3x3 at dilation 4 over 8x8 pixels, 4 of 9 taps inside per pixel) runs tap by tap instead, up
// to panel_tap_max_rows() pixels: each tap multiplies only the pixels it reads inside the
// input by its own rows of the panels, into f32 sums kept for the whole output. oneDNN 2.6 has
// no AVX2 direct kernel there and ran im2col and a GEMM over every tap (4.9-5.6 ms per conv,
// ORT 3.0).
#include <algorithm>
#include <vector>

#include "kernels/cpu/cache_size.hpp"
#include "kernels/cpu/conv_common.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/fused_activation.hpp"
#include "kernels/cpu/panels.hpp"
#include "ops/window.hpp"

namespace porta::cpu {
namespace {

/// Output pixels (all images) the kernel takes: beyond, the weights are reused enough for
/// oneDNN's blocked kernels.
constexpr int64_t kMaxRows = 16;
static_assert(kMaxRows <= kPanelMaxRows, "panel_product keeps the sums of at most kPanelMaxRows rows");
/// Weights (elements) from which the kernel runs. Cache-resident weights gain too: googlenet's
/// 16-pixel convs of 4.6-85 K weights ran 10-42% faster here than in oneDNN (9.3 -> 6.7 us,
/// 25.4 -> 20.4 us; densenet121 4.1 -> 3.5 ms, inception_v3 4.5 -> 4.0 ms at one thread); below
/// this a call is mostly its fixed costs.
constexpr int64_t kMinWeights = int64_t{1} << 12;

struct Geometry {
  opdef::WindowGeometry g;
  std::vector<int64_t> first, last;  // per spatial axis: the taps that read the input somewhere
  int64_t batch = 0, in_channels = 0, out_channels = 0;
  int64_t in_pixels = 0, out_pixels = 0;  // per image
  int64_t taps = 0, k = 0, rows = 0;      // kept taps, taps x in_channels, batch x out_pixels
  int64_t inside = 0;                     // (pixel, kept tap) pairs that read the input, over all images
  bool dilated = false;
};

/// The fraction of (pixel, tap) pairs that read the input at or below which a dilated conv runs
/// tap by tap (by_tap): above, a product over all taps at once does little wasted work.
constexpr double kByTapMaxInside = 0.5;

Geometry geometry_of(const KernelContext& ctx) {
  const Shape &x = ctx.in(0).shape(), &w = ctx.in(1).shape();
  Geometry r;
  r.g = opdef::window_geometry("Conv", x, std::vector<int64_t>(w.begin() + 2, w.end()), *ctx.attrs);
  const size_t sp = r.g.spatial();
  r.first.assign(sp, 0);
  r.last.resize(sp);
  for (size_t i = 0; i < sp; ++i) r.last[i] = r.g.kernel[i] - 1;
  if (auto crop = opdef::input_taps(r.g)) {
    r.first = crop->first;
    r.last = crop->last;
  }
  r.batch = x[0];
  r.in_channels = x[1];
  r.out_channels = w[0];
  r.in_pixels = shape_numel(r.g.in);
  r.out_pixels = shape_numel(r.g.out);
  r.taps = 1;
  for (size_t i = 0; i < sp; ++i) r.taps *= r.last[i] - r.first[i] + 1;
  r.k = r.taps * r.in_channels;
  r.rows = r.batch * r.out_pixels;
  // Pairs inside: per axis, the kept taps each output position reads inside, multiplied.
  r.inside = r.batch;
  for (size_t i = 0; i < sp; ++i) {
    int64_t axis = 0;
    for (int64_t o = 0; o < r.g.out[i]; ++o)
      for (int64_t t = r.first[i]; t <= r.last[i]; ++t) {
        const int64_t at = o * r.g.strides[i] - r.g.pad_begin[i] + t * r.g.dilations[i];
        axis += at >= 0 && at < r.g.in[i];
      }
    r.inside *= axis;
    r.dilated = r.dilated || r.g.dilations[i] > 1;
  }
  return r;
}

// Whether the conv runs tap by tap (the header): past kMaxRows pixels, dilated, mostly padding.
bool by_tap(const Geometry& geo) {
  return geo.rows > kMaxRows && geo.rows <= panel_tap_max_rows() && geo.dilated &&
         static_cast<double>(geo.inside) <= kByTapMaxInside * static_cast<double>(geo.rows * geo.taps);
}

std::string small_map_supports(const KernelContext& ctx) {
  const int64_t compute = ctx.attrs->get_int("porta_compute", 0);
  if (compute > 1 && compute != 16)
    return "computes in a low format other than bf16: the onednn implementation converts inside its primitive";
  if (compute == 16 && !panel_bf16_available())
    return "computes in bf16 without AVX-512 BF16 here: the onednn implementation converts inside its primitive";
  if (ctx.attrs->get_int("group") != 1) return "grouped conv: the onednn implementation takes it";
  if (!ctx.is_constant_input(1)) return "weights are not a session constant (panels are packed once per session)";
  const Shape& x = ctx.in(0).shape();
  if (x.size() < 3 || x.size() > 5) return str("input of rank ", x.size(), " (the kernel takes 1 to 3 spatial axes)");
  const Geometry geo = geometry_of(ctx);
  if (geo.rows == 0 || geo.in_channels == 0) return "empty conv: the onednn implementation takes it";
  if (compute == 16 && geo.rows > kMaxRows)
    return str(geo.rows, " output pixels in bf16: enough reuse of the weights for oneDNN's kernels (this one takes up to ",
               kMaxRows, "; tap by tap only in f32)");
  if (geo.rows > kMaxRows && !by_tap(geo))
    return str(geo.rows, " output pixels: enough reuse of the weights for oneDNN's kernels (this one takes up to ",
               kMaxRows, ", and up to ", panel_tap_max_rows(),
               " tap by tap for a dilated conv whose taps mostly read padding)");
  if (geo.out_channels * geo.k < kMinWeights)
    return str("weights of ", geo.out_channels * geo.k, " elements: mostly fixed costs (the kernel starts at ", kMinWeights,
               ")");
  return "";
}

// The weights as panels: panel p holds, for each of the K rows q = tap * in_channels + c (taps
// in row-major order over the kept ranges), the 32 output channels 32p..32p+31 (zeros past the
// last channel).
PanelsF32 pack_panels(const Tensor& w, const Geometry& geo) {
  const int64_t oc = geo.out_channels, ic = geo.in_channels, k = geo.k;
  const int64_t panels = (oc + kPanel - 1) / kPanel;
  const size_t sp = geo.g.spatial();
  PanelsF32 packed(static_cast<size_t>(panels * k * kPanel), 0.0f);
  // Offset of each kept tap inside one (output, input) channel's kernel.
  std::vector<int64_t> tap_offset;
  std::vector<int64_t> t(geo.first);
  for (int64_t n = 0; n < geo.taps; ++n) {
    int64_t off = 0;
    for (size_t i = 0; i < sp; ++i) off = off * geo.g.kernel[i] + t[i];
    tap_offset.push_back(off);
    for (size_t i = sp; i-- > 0;) {
      if (++t[i] <= geo.last[i]) break;
      t[i] = geo.first[i];
    }
  }
  const int64_t ksize = shape_numel(geo.g.kernel);
  const float* src = w.data<float>();
  for (int64_t o = 0; o < oc; ++o) {
    float* panel = packed.data() + (o / kPanel) * k * kPanel + o % kPanel;
    for (int64_t c = 0; c < ic; ++c) {
      const float* wc = src + (o * ic + c) * ksize;
      for (int64_t n = 0; n < geo.taps; ++n) panel[(n * ic + c) * kPanel] = wc[tap_offset[n]];
    }
  }
  return packed;
}

// fn(r, n, at) for every output row r (image, pixel) and kept tap n, rows in order and taps in
// row-major order within each: `at` is image * in_pixels + the input pixel the tap reads, or -1
// where it reads padding.
template <class Fn>
void for_each_row_tap(const Geometry& geo, Fn&& fn) {
  const size_t sp = geo.g.spatial();
  std::vector<int64_t> o(sp), t(sp);
  for (int64_t r = 0; r < geo.rows; ++r) {
    for (int64_t rest = r % geo.out_pixels, i = static_cast<int64_t>(sp) - 1; i >= 0; --i) {
      o[i] = rest % geo.g.out[i];
      rest /= geo.g.out[i];
    }
    t = geo.first;
    for (int64_t n = 0; n < geo.taps; ++n) {
      int64_t pixel = 0;
      bool inside = true;
      for (size_t i = 0; i < sp; ++i) {
        const int64_t at = o[i] * geo.g.strides[i] - geo.g.pad_begin[i] + t[i] * geo.g.dilations[i];
        inside = inside && at >= 0 && at < geo.g.in[i];
        pixel = pixel * geo.g.in[i] + at;
      }
      fn(r, n, inside ? r / geo.out_pixels * geo.in_pixels + pixel : int64_t{-1});
      for (size_t i = sp; i-- > 0;) {
        if (++t[i] <= geo.last[i]) break;
        t[i] = geo.first[i];
      }
    }
  }
}

// The input channels of image pixel `at` (image * in_pixels + pixel) into dst.
void gather_pixel(const float* xd, bool channels_last, const Geometry& geo, int64_t at, float* dst) {
  const int64_t ic = geo.in_channels;
  if (channels_last) {
    std::copy_n(xd + at * ic, ic, dst);
    return;
  }
  const int64_t b = at / geo.in_pixels, px = at % geo.in_pixels;
  for (int64_t c = 0; c < ic; ++c) dst[c] = xd[(b * ic + c) * geo.in_pixels + px];
}

// The input patch of every output pixel: rows x K floats, row r = (image, pixel), column
// tap * in_channels + c; zero where the tap reads padding.
void gather_patches(const Tensor& x, bool channels_last, const Geometry& geo, float* cols) {
  const float* xd = x.data<float>();
  const int64_t ic = geo.in_channels;
  for_each_row_tap(geo, [&](int64_t r, int64_t n, int64_t at) {
    float* dst = cols + r * geo.k + n * ic;
    if (at < 0) std::fill(dst, dst + ic, 0.0f);
    else gather_pixel(xd, channels_last, geo, at, dst);
  });
}

// What a session step keeps between calls (KernelContext::state): the geometry, the packed
// panels and the layouts, so a call does no more than gather and multiply. Measured on
// mnasnet0_5 at one thread (perf): recomputing the geometry, formatting the panels' cache key
// and looking it up took ~1 us per call, of calls taking 2-5 us.
struct SmallMapStep {
  Shape x_shape;
  // The weights the step was prepared for, by storage (not by data pointer: reading the data
  // of a weight the session released would rebuild it).
  const void* weights = nullptr;
  int64_t weights_offset = 0;
  Geometry geo;
  std::shared_ptr<const PanelsF32> packed;
  // In a bf16 call (porta_compute), the weights as bf16 panels (panels.hpp) instead.
  std::shared_ptr<const PanelsBf16> packed16;
  ConvLayouts layouts;
  // The input already is the patch matrix (rows x K): one tap over every input pixel in order
  // (a 1x1 conv, stride 1, no padding, or a kernel cropped to one tap of that kind), with the
  // input channels-last or a single pixel per image. No gather then.
  bool x_is_patches = false;
  opdef::FusedActivation act;
  // Tap by tap (by_tap): for each kept tap, the output rows it reads the input for and the
  // input pixel (over all images) each of them reads.
  bool by_tap = false;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> tap_rows;

  bool fits(const Tensor& x, const Tensor& w) const {
    return x.shape() == x_shape && w.storage().get() == weights && w.offset() == weights_offset;
  }
};

// Lets the session free W's own bytes once every step reading it holds it (KernelContext::held),
// so a session keeps one copy of the weights, not two: f32 panels over every tap hold all of W
// and give it back exactly (panel p, row q = tap * in_channels + c, lane o % 32). bf16 panels
// (rounded) and panels of cropped taps do not hold it.
void hold_panels(KernelContext& ctx, const SmallMapStep& st) {
  ctx.held.clear();
  const Geometry& geo = st.geo;
  if (!st.packed || geo.taps != shape_numel(geo.g.kernel)) return;
  ctx.held.push_back({1, [packed = st.packed, oc = geo.out_channels, ic = geo.in_channels, taps = geo.taps,
                          k = geo.k](void* dst) {
                        float* w = static_cast<float*>(dst);
                        for (int64_t o = 0; o < oc; ++o) {
                          const float* panel = packed->data() + (o / kPanel) * k * kPanel + o % kPanel;
                          for (int64_t c = 0; c < ic; ++c)
                            for (int64_t n = 0; n < taps; ++n) w[(o * ic + c) * taps + n] = panel[(n * ic + c) * kPanel];
                        }
                      }});
}

std::shared_ptr<SmallMapStep> prepare(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  auto st = std::make_shared<SmallMapStep>();
  st->x_shape = x.shape();
  st->weights = w.storage().get();
  st->weights_offset = w.offset();
  st->geo = geometry_of(ctx);
  const Geometry& geo = st->geo;
  std::string what = "conv-panels";
  for (size_t i = 0; i < geo.g.spatial(); ++i) what += str("|", geo.first[i], ":", geo.last[i]);
  if (ctx.attrs->get_int("porta_compute", 0) == 16) {
    st->packed16 = std::static_pointer_cast<const PanelsBf16>(cached_derived(w, what + "|bf16", [&] {
      const PanelsF32 f32 = pack_panels(w, geo);
      return std::static_pointer_cast<const void>(std::make_shared<const PanelsBf16>(
          bf16_panels_of(f32.data(), geo.k, (geo.out_channels + kPanel - 1) / kPanel)));
    }));
  } else {
    st->packed = std::static_pointer_cast<const PanelsF32>(cached_derived(w, what, [&] {
      return std::static_pointer_cast<const void>(std::make_shared<const PanelsF32>(pack_panels(w, geo)));
    }));
  }
  st->layouts = conv_layouts(ctx);
  bool identity = geo.taps == 1 && geo.in_pixels == geo.out_pixels;
  for (size_t i = 0; i < geo.g.spatial(); ++i)
    identity = identity && geo.g.strides[i] == 1 && geo.first[i] * geo.g.dilations[i] == geo.g.pad_begin[i];
  st->x_is_patches = identity && (st->layouts.x_last || geo.in_pixels == 1);
  st->act = opdef::parse_fused_activation(*ctx.attrs);
  st->by_tap = by_tap(geo);
  if (st->by_tap) {
    st->tap_rows.resize(static_cast<size_t>(geo.taps));
    for_each_row_tap(geo, [&](int64_t r, int64_t n, int64_t at) {
      if (at >= 0) st->tap_rows[static_cast<size_t>(n)].emplace_back(r, at);
    });
  }
  return st;
}

void conv_small_map(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  auto* step = static_cast<SmallMapStep*>(ctx.state.get());
  std::shared_ptr<SmallMapStep> fresh;
  if (!step || !step->fits(x, w)) {
    fresh = prepare(ctx);
    step = fresh.get();
    // Kept only for a session's constant weights: their storage, the key, never changes.
    if (ctx.is_constant_input(1)) {
      ctx.state = fresh;
      hold_panels(ctx, *fresh);
    }
  }
  const Geometry& geo = step->geo;
  const PanelsF32* packed = step->packed.get();
  const bool y_last = step->layouts.y_last, r_last = step->layouts.r_last;
  const Tensor* residual = ctx.has_input(3) ? &ctx.in(3) : nullptr;
  const float* bias = ctx.has_input(2) ? ctx.in(2).data<float>() : nullptr;
  const opdef::FusedActivation& act = step->act;

  const int64_t oc = geo.out_channels, rows = geo.rows, pixels = geo.out_pixels;
  float* yd = y.data<float>();
  const float* rd = residual ? residual->data<float>() : nullptr;
  // Row r's sums of columns o0..o0+width: the bias, the residual and the activation, stored.
  auto finish = [&](int64_t r, int64_t o0, int64_t width, float* s) {
    const int64_t b = r / pixels, px = r % pixels;
    if (bias)
      for (int64_t j = 0; j < width; ++j) s[j] += bias[o0 + j];
    if (rd) {
      if (r_last)
        for (int64_t j = 0; j < width; ++j) s[j] += rd[r * oc + o0 + j];
      else
        for (int64_t j = 0; j < width; ++j) s[j] += rd[(b * oc + o0 + j) * pixels + px];
    }
    activate_f32(act, s, width);
    if (y_last) std::copy_n(s, width, yd + r * oc + o0);
    else
      for (int64_t j = 0; j < width; ++j) yd[(b * oc + o0 + j) * pixels + px] = s[j];
  };

  const bool weights_cached = constants_stay_cached(ctx.session_constant_bytes);
  if (step->by_tap) {
    const int64_t ic = geo.in_channels;
    thread_local std::vector<float> sums_all, rows_in;
    sums_all.assign(static_cast<size_t>(rows * oc), 0.0f);
    rows_in.resize(static_cast<size_t>(rows * ic));
    // The calling thread's buffers, by pointer: the stores run on the product's threads, where
    // the names would be those threads' own thread_local buffers.
    float* const all = sums_all.data();
    const float* xd = x.data<float>();
    for (int64_t n = 0; n < geo.taps; ++n) {
      const auto& taken = step->tap_rows[static_cast<size_t>(n)];
      const int64_t count = static_cast<int64_t>(taken.size());
      if (count == 0) continue;
      for (int64_t i = 0; i < count; ++i)
        gather_pixel(xd, step->layouts.x_last, geo, taken[static_cast<size_t>(i)].second, rows_in.data() + i * ic);
      panel_product(
          rows_in.data(), count, ic, packed->data() + n * ic * kPanel, oc,
          [&](int64_t o0, int64_t width, float* sums) {
            for (int64_t i = 0; i < count; ++i) {
              float* into = all + taken[static_cast<size_t>(i)].first * oc + o0;
              const float* from = sums + i * kPanel;
              for (int64_t j = 0; j < width; ++j) into[j] += from[j];
            }
          },
          geo.k * kPanel, weights_cached);
    }
    for (int64_t r = 0; r < rows; ++r) finish(r, 0, oc, all + r * oc);
    return;
  }

  const float* a = x.data<float>();
  if (!step->x_is_patches) {
    thread_local std::vector<float> cols;
    cols.resize(static_cast<size_t>(geo.rows * geo.k));
    gather_patches(x, step->layouts.x_last, geo, cols.data());
    a = cols.data();
  }
  if (step->packed16) {  // bf16 inside: the patches rounded to bf16 pairs, f32 sums
    panel_product_bf16(
        a, rows, geo.k, step->packed16->data(), oc,
        [&](int64_t o0, int64_t width, float* sums) {
          for (int64_t r = 0; r < rows; ++r) finish(r, o0, width, sums + r * kPanel);
        },
        weights_cached);
    return;
  }
  panel_product(a, rows, geo.k, packed->data(), oc, [&](int64_t o0, int64_t width, float* sums) {
    for (int64_t r = 0; r < rows; ++r) finish(r, o0, width, sums + r * kPanel);
  }, 0, weights_cached);
}

const bool small_map_registered = register_kernel_at_load([] {
  KernelDef k = conv_kernel_def();
  k.impl = {"small_map", 1};
  k.fn = conv_small_map;
  k.supports = small_map_supports;
  return k;
}());

}  // namespace
}  // namespace porta::cpu
