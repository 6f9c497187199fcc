// LayerNormalization rewrite (runtime/graph_fusion.hpp, fuse_layer_norm): ONNX has the op only
// from opset 17, so PyTorch exports nn.LayerNorm at opsets 13-16 as nine nodes, each a pass
// over the activation (two of them reductions):
//   mean = ReduceMean(x, last axis)   d = Sub(x, mean)   var = ReduceMean(Pow(d, 2), last axis)
//   y = Div(d, Sqrt(Add(var, eps))) * gamma + beta
// They become one LayerNormalization (axis -1, epsilon eps), one pass. RMSNorm (LLaMA's, T5's),
// which ONNX does not have, is written the same way in every opset:
//   y = x * (1 / Sqrt(ReduceMean(x^2, last axis) + eps)) * w
// (1 / s as Div(1, s) — torch.rsqrt's export — or Reciprocal(s); or x / s) and becomes one
// RmsNorm (ai.porta).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

struct LayerNormMatch {
  bool rms = false;  // RmsNorm (no beta) rather than LayerNormalization
  int x = -1, gamma = -1, beta = -1;
  double eps = 0.0;
  std::vector<int> nodes;  // the pattern's nodes; the last becomes the LayerNormalization
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), r_(g) {}

  // The pattern whose first ReduceMean is node `first`, if all of it is there.
  std::optional<LayerNormMatch> match(int first) const {
    LayerNormMatch m;
    const Node& rm = g_.nodes[first];
    if (!last_axis_mean(rm)) return std::nullopt;
    m.x = rm.inputs[0];
    const Value& xv = g_.values[m.x];
    if (!xv.shape_known || xv.shape.empty() || xv.shape.back() <= 0 || (xv.dtype != DType::f32 && xv.dtype != DType::f16))
      return std::nullopt;
    const int64_t d_len = xv.shape.back();
    // d = x - mean: mean read by the Sub alone.
    const int sub = only_reader(rm.outputs[0]);
    if (sub < 0 || !is_onnx_op(g_.nodes[sub], "Sub") || g_.nodes[sub].inputs != std::vector<int>{m.x, rm.outputs[0]})
      return std::nullopt;
    const int d = g_.nodes[sub].outputs[0];
    // d read by exactly Pow(d, 2) and Div(d, .).
    if (r_.is_output[d] || r_.readers[d].size() != 2) return std::nullopt;
    int pow = -1, div = -1;
    for (int r : r_.readers[d]) {
      const Node& n = g_.nodes[r];
      if (is_onnx_op(n, "Pow") && n.inputs.size() == 2 && n.inputs[0] == d && scalar_is(n.inputs[1], 2.0)) pow = r;
      else if (is_onnx_op(n, "Div") && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] != d) div = r;
    }
    if (pow < 0 || div < 0) return std::nullopt;
    const int rm2 = only_reader(g_.nodes[pow].outputs[0]);
    if (rm2 < 0 || !last_axis_mean(g_.nodes[rm2])) return std::nullopt;
    const int add = only_reader(g_.nodes[rm2].outputs[0]);
    if (add < 0 || !is_onnx_op(g_.nodes[add], "Add") || g_.nodes[add].inputs.size() != 2) return std::nullopt;
    const Node& an = g_.nodes[add];
    const int var = g_.nodes[rm2].outputs[0];
    const int eps_value = an.inputs[0] == var ? an.inputs[1] : an.inputs[0];
    std::optional<double> eps = constant_scalar(g_, eps_value);
    if (!eps || !(*eps >= 0.0) || (an.inputs[0] != var && an.inputs[1] != var)) return std::nullopt;
    m.eps = *eps;
    const int sqrt = only_reader(an.outputs[0]);
    if (sqrt < 0 || !is_onnx_op(g_.nodes[sqrt], "Sqrt") || only_reader(g_.nodes[sqrt].outputs[0]) != div ||
        g_.nodes[div].inputs[1] != g_.nodes[sqrt].outputs[0])
      return std::nullopt;
    // * gamma + beta, constants of the last axis' length (either operand order).
    const int mul = only_reader(g_.nodes[div].outputs[0]);
    if (mul < 0 || !is_onnx_op(g_.nodes[mul], "Mul")) return std::nullopt;
    m.gamma = other_constant(g_.nodes[mul], g_.nodes[div].outputs[0], d_len, xv.dtype);
    const int bias = only_reader(g_.nodes[mul].outputs[0]);
    if (m.gamma < 0 || bias < 0 || !is_onnx_op(g_.nodes[bias], "Add")) return std::nullopt;
    m.beta = other_constant(g_.nodes[bias], g_.nodes[mul].outputs[0], d_len, xv.dtype);
    if (m.beta < 0) return std::nullopt;
    m.nodes = {first, sub, pow, rm2, add, sqrt, div, mul, bias};
    return m;
  }

  // RMSNorm whose ReduceMean of x^2 is node `rm_index`, if all of it is there.
  std::optional<LayerNormMatch> match_rms(int rm_index) const {
    const Node& rm = g_.nodes[rm_index];
    if (!last_axis_mean(rm)) return std::nullopt;
    const int sq = rm.inputs[0], sq_node = g_.values[sq].producer;
    if (sq_node < 0 || only_reader(sq) != rm_index) return std::nullopt;
    const Node& sn = g_.nodes[sq_node];
    LayerNormMatch m;
    m.rms = true;
    if (is_onnx_op(sn, "Pow") && sn.inputs.size() == 2 && scalar_is(sn.inputs[1], 2.0)) m.x = sn.inputs[0];
    else if (is_onnx_op(sn, "Mul") && sn.inputs.size() == 2 && sn.inputs[0] == sn.inputs[1]) m.x = sn.inputs[0];
    if (m.x < 0) return std::nullopt;
    const Value& xv = g_.values[m.x];
    if (!xv.shape_known || xv.shape.empty() || xv.shape.back() <= 0 || (xv.dtype != DType::f32 && xv.dtype != DType::f16))
      return std::nullopt;
    const int add = only_reader(rm.outputs[0]);
    if (add < 0 || !is_onnx_op(g_.nodes[add], "Add") || g_.nodes[add].inputs.size() != 2) return std::nullopt;
    const Node& an = g_.nodes[add];
    const int ms = rm.outputs[0];
    if (an.inputs[0] != ms && an.inputs[1] != ms) return std::nullopt;
    std::optional<double> eps = constant_scalar(g_, an.inputs[0] == ms ? an.inputs[1] : an.inputs[0]);
    if (!eps || !(*eps >= 0.0)) return std::nullopt;
    m.eps = *eps;
    const int sqrt = only_reader(an.outputs[0]);
    if (sqrt < 0 || !is_onnx_op(g_.nodes[sqrt], "Sqrt")) return std::nullopt;
    const int s = g_.nodes[sqrt].outputs[0];
    const int r = only_reader(s);
    if (r < 0) return std::nullopt;
    const Node& rn = g_.nodes[r];
    m.nodes = {sq_node, rm_index, add, sqrt};
    int n = -1;  // x / rms
    if (is_onnx_op(rn, "Div") && rn.inputs.size() == 2 && rn.inputs[0] == m.x && rn.inputs[1] == s) {
      n = r;
    } else if ((is_onnx_op(rn, "Div") && rn.inputs.size() == 2 && rn.inputs[1] == s && scalar_is(rn.inputs[0], 1.0)) ||
               (is_onnx_op(rn, "Reciprocal") && rn.inputs.size() == 1)) {
      m.nodes.push_back(r);
      const int inv = rn.outputs[0];
      n = only_reader(inv);
      const Node* nn = n >= 0 ? &g_.nodes[n] : nullptr;
      if (!nn || !is_onnx_op(*nn, "Mul") || nn->inputs.size() != 2 ||
          !((nn->inputs[0] == m.x && nn->inputs[1] == inv) || (nn->inputs[0] == inv && nn->inputs[1] == m.x)))
        return std::nullopt;
    } else {
      return std::nullopt;
    }
    const int mul = only_reader(g_.nodes[n].outputs[0]);
    if (mul < 0 || !is_onnx_op(g_.nodes[mul], "Mul")) return std::nullopt;
    m.gamma = other_constant(g_.nodes[mul], g_.nodes[n].outputs[0], xv.shape.back(), xv.dtype);
    if (m.gamma < 0) return std::nullopt;
    m.nodes.push_back(n);
    m.nodes.push_back(mul);
    return m;
  }

 private:
  // ReduceMean over the last axis alone (attribute, or constant input at opset 18), keeping it.
  bool last_axis_mean(const Node& n) const {
    if (!is_onnx_op(n, "ReduceMean") || n.inputs.empty() || n.inputs[0] < 0) return false;
    if (n.attrs.get_int("keepdims", 1) != 1) return false;
    std::vector<int64_t> axes;
    if (n.inputs.size() > 1 && n.inputs[1] >= 0) {
      const Tensor* t = constant_tensor(g_, n.inputs[1]);
      if (!t || t->numel() != 1) return false;
      axes = {static_cast<int64_t>(t->to_doubles().at(0))};
    } else {
      axes = n.attrs.get_ints("axes", {});
    }
    const Value& x = g_.values[n.inputs[0]];
    if (axes.size() != 1 || !x.shape_known) return false;
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    return axes[0] == -1 || axes[0] == rank - 1;
  }

  bool scalar_is(int v, double want) const {
    std::optional<double> c = constant_scalar(g_, v);
    return c && *c == want;
  }

  // The operand of the two-input node `n` that is not `v` (through Identity nodes), when it is a
  // constant of shape [len] in `dtype`; else -1.
  int other_constant(const Node& n, int v, int64_t len, DType dtype) const {
    if (n.inputs.size() != 2 || (n.inputs[0] != v && n.inputs[1] != v)) return -1;
    const int c = through_identities(g_, n.inputs[0] == v ? n.inputs[1] : n.inputs[0]);
    const Tensor* t = constant_tensor(g_, c);
    // 1-D: LayerNormalization's Scale and B may not have more axes than the normalized ones, and
    // RmsNorm's Scale is 1-D.
    if (!t || t->dtype() != dtype || t->rank() != 1 || t->dim(0) != len) return -1;
    return c;
  }

  int only_reader(int v) const { return r_.only_reader(v); }

  const Graph& g_;
  ValueReaders r_;
};

}  // namespace

bool norm_candidates(const Graph& graph) {
  for (const Node& n : graph.nodes) {
    if (!is_onnx_op(n, "ReduceMean") || n.inputs.empty() || n.inputs[0] < 0) continue;
    const int x = n.inputs[0], p = graph.values[x].producer;
    // LayerNormalization: a Sub of x and its mean reads it; RMSNorm: it averages a square.
    for (const Node& r : graph.nodes)
      if (is_onnx_op(r, "Sub") && r.inputs.size() == 2 && r.inputs[0] == x && r.inputs[1] == n.outputs[0]) return true;
    if (p >= 0 && (is_onnx_op(graph.nodes[p], "Pow") || (is_onnx_op(graph.nodes[p], "Mul") && graph.nodes[p].inputs.size() == 2 &&
                                                    graph.nodes[p].inputs[0] == graph.nodes[p].inputs[1])))
      return true;
  }
  return false;
}

std::shared_ptr<const Graph> fuse_norms(const std::shared_ptr<const Graph>& graph, Device device, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* ln = find_op("", "LayerNormalization");
  const OpSchema* rms = find_op("ai.porta", "RmsNorm");
  if (!ln || !rms) return graph;
  const Graph& g = *graph;
  Matcher matcher(g);
  std::vector<PatternRewrite> rewrites;
  // A LayerNorm's tail is also an RMSNorm of x - mean; the LayerNorm, found first (at its first
  // ReduceMean), takes the nodes.
  std::vector<bool> taken(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<LayerNormMatch> m = matcher.match(static_cast<int>(i));
    if (!m) m = matcher.match_rms(static_cast<int>(i));
    // Only where the device runs the op itself: elsewhere it would decompose back.
    if (!m || resolve(m->rms ? *rms : *ln, device, g.values[m->x].dtype).path != Path::native) continue;
    if (std::any_of(m->nodes.begin(), m->nodes.end(), [&](int k) { return taken[k]; })) continue;
    for (int k : m->nodes) taken[k] = true;
    Attributes a;
    a.set("epsilon", m->eps);
    if (m->rms) {
      rewrites.push_back({m->nodes, rms, {m->x, m->gamma}, std::move(a), ""});
    } else {
      a.set("axis", int64_t{-1});
      rewrites.push_back({m->nodes, ln, {m->x, m->gamma, m->beta}, std::move(a), ""});
    }
  }
  if (rewrites.empty()) return graph;
  return rewrite_patterns(g, rewrites);
}

}  // namespace porta::detail
