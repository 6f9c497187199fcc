// Padding-only taps (runtime/graph_fusion.hpp, trim_padding_taps): a Conv whose kernel reaches
// past its input on every output position along some axis (DeepLabV3's atrous convolutions
// over a small map: dilation 12, 24 and 36 with padding as large, over 4x4 maps at 64x64 inputs;
// a 7x7 depthwise conv over a 2x2 map) multiplies those taps by zeros only. The Conv becomes
// one over the taps that read the input, with its weights sliced to them and its padding cut
// by what the dropped taps spanned: the same output shape and values (each output sums the same
// products, less ones that were 0 x w), and a 3x3 atrous conv over 4x4 becomes a 1x1 one. The
// cpu Conv kernel makes the same cut itself (kernels/cpu/conv.cpp, for eager calls too); as a
// plan's rewrite it reaches every device's kernels, and the fusions after it see the cut Conv.
#include <optional>
#include <vector>

#include "ops/window.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

// The geometry of Conv node `n` of annotated graph `g` and the taps that read the input
// (opdef::input_taps, the cut the cpu kernel also makes on its own), when there are taps to cut.
struct Cut {
  opdef::WindowGeometry geo;
  opdef::TapRange taps;
};
std::optional<Cut> cut_of(const Graph& g, const Node& n) {
  if (!is_onnx_op(n, "Conv") || n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return std::nullopt;
  const Shape* xs = known_shape(g, n.inputs[0]);
  const Tensor* w = constant_tensor(g, through_identities(g, n.inputs[1]));
  if (!xs || !w || w->rank() < 3 || xs->size() != static_cast<size_t>(w->rank())) return std::nullopt;
  for (int64_t d : *xs)
    if (d <= 0) return std::nullopt;  // unknown or empty: nothing to gain
  Cut c;
  try {
    c.geo = opdef::window_geometry("Conv", *xs, Shape(w->shape().begin() + 2, w->shape().end()), n.attrs);
  } catch (const Error&) {
    return std::nullopt;  // the kernel reports it
  }
  std::optional<opdef::TapRange> taps = opdef::input_taps(c.geo);
  if (!taps) return std::nullopt;
  c.taps = std::move(*taps);
  return c;
}

}  // namespace

std::shared_ptr<const Graph> trim_padding_taps(const std::shared_ptr<const Graph>& graph, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  std::shared_ptr<Graph> out;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const Graph& cur = out ? *out : *graph;
    const std::optional<Cut> cut = cut_of(cur, cur.nodes[i]);
    if (!cut) continue;
    if (!out) out = std::make_shared<Graph>(*graph);
    Node& n = out->nodes[i];
    const Tensor w = *constant_tensor(*out, through_identities(*out, n.inputs[1]));  // a handle: values grow below
    const opdef::WindowGeometry& geo = cut->geo;
    const opdef::TapRange& taps = cut->taps;
    const size_t sp = geo.spatial();
    Tensor sliced = w;
    std::vector<int64_t> kernel(sp), pads(2 * sp);
    for (size_t a = 0; a < sp; ++a) {
      sliced = sliced.slice(static_cast<int>(a + 2), taps.first[a], taps.last[a] + 1);
      kernel[a] = taps.last[a] - taps.first[a] + 1;
      pads[a] = geo.pad_begin[a] - taps.first[a] * geo.dilations[a];
      pads[sp + a] = geo.pad_end[a] - (geo.kernel[a] - 1 - taps.last[a]) * geo.dilations[a];
    }
    sliced = sliced.contiguous();
    const int v = new_value(*out, n.name + "/input_taps", sliced.dtype(), sliced.shape());
    out->values[v].constant = std::move(sliced);
    n.inputs[1] = v;
    n.attrs.set("porta_taps_of", geo.kernel);
    n.attrs.set("kernel_shape", kernel);
    n.attrs.set("pads", pads);
    n.attrs.set("auto_pad", std::string("NOTSET"));
  }
  return out ? out : graph;
}

bool padding_tap_candidates(const Graph& g) {
  for (const Node& n : g.nodes)
    if (is_onnx_op(n, "Conv") && n.inputs.size() >= 2 && n.inputs[1] >= 0) {
      const Tensor* w = constant_tensor(g, through_identities(g, n.inputs[1]));
      if (!w || w->rank() < 3) continue;
      for (int a = 2; a < w->rank(); ++a)
        if (w->dim(a) > 1) return true;
    }
  return false;
}

}  // namespace porta::detail
