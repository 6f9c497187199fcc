// Gated-linear-unit rewrite (runtime/graph_fusion.hpp, fuse_gated_linear): LLaMA-style
// feed-forward layers (SwiGLU: `F.silu(self.w1(x)) * self.w3(x)`) and T5 v1.1's GeGLU export
// as two MatMuls of one input and the Mul of their products, three passes, the gate's
// activation fused into its MatMul by then (runtime/graph_fusion.cpp) and a Linear layer's bias
// too (runtime/matmul_bias_fusion.cpp). They become one GatedLinear (ai.porta,
// ops/gated_linear.cpp) where the device runs it natively.
#include <optional>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

struct GatedLinearMatch {
  int x = -1, wg = -1, wu = -1, bg = -1, bu = -1;
  int gate = -1;  // the MatMul node whose activation gates
  std::vector<int> nodes;  // the two MatMuls (in node order), the Mul
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), r_(g) {}

  // The layer whose Mul is node `k`, if all of it is there.
  std::optional<GatedLinearMatch> match(int k) const {
    const Node& mul = g_.nodes[k];
    if (!is_onnx_op(mul, "Mul", 2) || mul.inputs[0] == mul.inputs[1]) return std::nullopt;
    const int a = product(mul.inputs[0], k), b = product(mul.inputs[1], k);
    if (a < 0 || b < 0) return std::nullopt;
    const Node &na = g_.nodes[a], &nb = g_.nodes[b];
    if (na.inputs[0] != nb.inputs[0]) return std::nullopt;  // one X
    // The gate carries the activation; with none on either, a bilinear layer (the first one
    // gates, with no activation).
    const bool act_a = !na.attrs.get_string("porta_activation", "").empty();
    const bool act_b = !nb.attrs.get_string("porta_activation", "").empty();
    if (act_a && act_b) return std::nullopt;
    GatedLinearMatch m;
    m.gate = act_b ? b : a;
    const int up = m.gate == a ? b : a;
    const Node &g = g_.nodes[m.gate], &u = g_.nodes[up];
    m.x = g.inputs[0];
    m.wg = g.inputs[1];
    m.wu = u.inputs[1];
    m.bg = g.inputs.size() > 2 ? g.inputs[2] : -1;
    m.bu = u.inputs.size() > 2 ? u.inputs[2] : -1;
    const Shape *sg = weight_shape(m.wg), *su = weight_shape(m.wu);
    if (!sg || !su || *sg != *su) return std::nullopt;
    const DType dt = dtype_of(g_, m.x);
    if (dt != DType::f32 && dt != DType::f16) return std::nullopt;
    for (int v : {m.wg, m.wu, m.bg, m.bu})
      if (v >= 0 && dtype_of(g_, v) != dt) return std::nullopt;
    m.nodes = {std::min(a, b), std::max(a, b), k};
    return m;
  }

 private:
  // The ONNX MatMul producing `v` for the Mul `mul` alone: no residual, B's shape known.
  int product(int v, int mul) const {
    if (v < 0 || r_.only_reader(v) != mul) return -1;
    const int p = g_.values[v].producer;
    if (p < 0) return -1;
    const Node& n = g_.nodes[p];
    if (!is_onnx_op(n, "MatMul") || n.inputs.size() < 2 || n.inputs.size() > 3 || n.inputs[0] < 0 || n.inputs[1] < 0)
      return -1;
    return p;
  }
  // A weight's shape: K x F, known (a constant, also through the Identity nodes with which
  // PyTorch's export shares equal initializers).
  const Shape* weight_shape(int v) const {
    const Shape* s = known_shape(g_, through_identities(g_, v));
    return s && s->size() == 2 && (*s)[0] >= 0 && (*s)[1] >= 0 ? s : nullptr;
  }

  const Graph& g_;
  ValueReaders r_;
};

}  // namespace

std::shared_ptr<const Graph> fuse_gated_linear(const std::shared_ptr<const Graph>& graph, Device device, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* op = find_op("ai.porta", "GatedLinear");
  if (!op) return graph;
  const Graph& g = *graph;
  Matcher matcher(g);
  std::vector<PatternRewrite> rewrites;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<GatedLinearMatch> m = matcher.match(static_cast<int>(i));
    // Only where the device runs the op itself: elsewhere it would decompose back.
    if (!m || resolve(*op, device, dtype_of(g, m->x)).path != Path::native) continue;
    Attributes a;
    copy_fused_activation(g.nodes[m->gate].attrs, a, "activation");
    const std::vector<int> inputs{m->x, m->wg, m->wu, m->bg, m->bu};
    if (!native_for_shapes(g, *op, inputs, a, g.nodes[m->nodes.back()].outputs[0], device)) continue;
    rewrites.push_back({m->nodes, op, inputs, std::move(a), ""});
  }
  if (rewrites.empty()) return graph;
  return rewrite_patterns(g, rewrites);
}

bool gated_linear_candidates(const Graph& g, Device device) {
  Matcher matcher(g);
  return native_match_exists(g, "ai.porta", "GatedLinear", device, [&](int i) {
    auto m = matcher.match(i);
    return m ? m->x : -1;
  });
}

}  // namespace porta::detail
