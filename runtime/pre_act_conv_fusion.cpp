// Pre-activation rewrite (runtime/graph_fusion.hpp, fuse_pre_act_conv): DenseNet's layers and
// pre-activation ResNets normalize before they convolve,
//   y = BatchNormalization(x, gamma, beta, mean, var)   its activation (ReLU) fused by now
//   z = Conv(y, W, B)                                    1x1, stride 1, no padding, group 1
// and where only such Convs read y, each becomes one PreActConv (ai.porta,
// ops/pre_act_conv.cpp) of x with the normalization's per-channel scale and shift
// (scale = gamma / sqrt(var + epsilon), shift = beta - mean * scale, folded once, in float64),
// where the device runs it natively at the plan's shapes: the Conv's kernel maps the channels
// it reads anyway, and the normalized map (DenseNet's whole concatenation, per layer) is never
// written. The Conv's own fused activation stays on the new node.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

struct PreActMatch {
  int norm = -1, x = -1;
  const Tensor *gamma = nullptr, *beta = nullptr, *mean = nullptr, *var = nullptr;
  double eps = 0;
  std::vector<int> convs;  // in node order
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), r_(g) {}

  // The normalization at node `k` and the Convs reading it, if every reader is such a Conv.
  std::optional<PreActMatch> match(int k) const {
    const Node& bn = g_.nodes[k];
    if (!is_onnx_op(bn, "BatchNormalization", 5) || bn.outputs.size() != 1 || bn.inputs[0] < 0 ||
        bn.attrs.get_int("training_mode", 0) != 0)
      return std::nullopt;
    PreActMatch m;
    m.norm = k, m.x = bn.inputs[0];
    m.eps = bn.attrs.get_float("epsilon", 1e-5);
    const DType dt = dtype_of(g_, m.x);
    if (dt != DType::f32 && dt != DType::f16) return std::nullopt;
    const Tensor** params[] = {&m.gamma, &m.beta, &m.mean, &m.var};
    for (size_t i = 0; i < 4; ++i) {
      const Tensor* t = bn.inputs[i + 1] >= 0 ? constant_tensor(g_, through_identities(g_, bn.inputs[i + 1])) : nullptr;
      if (!t || t->rank() != 1 || t->dtype() != dt || (i > 0 && t->dim(0) != m.gamma->dim(0))) return std::nullopt;
      *params[i] = t;
    }
    const int y = bn.outputs[0];
    if (y < 0 || r_.is_output[y] || r_.readers[y].empty()) return std::nullopt;
    std::vector<int> readers = r_.readers[y];
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    for (int c : readers) {
      if (!pointwise_conv(g_.nodes[c], y, m.gamma->dim(0), dt)) return std::nullopt;
      m.convs.push_back(c);
    }
    return m;
  }

 private:
  // A pointwise Conv of `y` (pointwise_conv_weight) reading its C channels, stride 1.
  bool pointwise_conv(const Node& n, int y, int64_t C, DType dt) const {
    const Shape* w = pointwise_conv_weight(g_, n, y, dt);
    if (!w || (*w)[1] != C) return false;
    for (int64_t s : n.attrs.get_ints("strides", {}))
      if (s != 1) return false;
    return true;
  }

  const Graph& g_;
  ValueReaders r_;
};

// PreActConv's attributes: the normalization's fused activation as `activation`, the Conv's
// fused activation kept as its own.
Attributes pre_act_attrs(const Node& norm, const Node& conv) {
  Attributes a;
  copy_fused_activation(norm.attrs, a, "activation");
  for (const char* key : {"porta_activation", "porta_activation_alpha", "porta_activation_beta"})
    if (const AttrValue* v = conv.attrs.find(key)) a.set(key, *v);
  return a;
}

}  // namespace

std::shared_ptr<const Graph> fuse_pre_act_conv(const std::shared_ptr<const Graph>& graph, Device device, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* op = find_op("ai.porta", "PreActConv");
  if (!op) return graph;
  const Graph& g = *graph;
  Matcher matcher(g);
  std::vector<PreActMatch> found;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<PreActMatch> m = matcher.match(static_cast<int>(i));
    if (!m || resolve(*op, device, dtype_of(g, m->x)).path != Path::native) continue;
    // Every Conv or none: the normalization's dispatch goes only if nothing else needs its
    // output. Asked with the normalization's gamma and beta for Scale and Shift (their shape
    // and dtype).
    const Node& bn = g.nodes[m->norm];
    bool all = true;
    for (int c : m->convs) {
      const Node& n = g.nodes[c];
      const int bias = n.inputs.size() > 2 ? n.inputs[2] : -1;
      all = all && native_for_shapes(g, *op, {m->x, bn.inputs[1], bn.inputs[2], n.inputs[1], bias},
                                     pre_act_attrs(bn, n), n.outputs[0], device);
    }
    if (all) found.push_back(std::move(*m));
  }
  if (found.empty()) return graph;
  auto out = std::make_shared<Graph>(g);
  std::vector<PatternRewrite> rewrites;
  for (const PreActMatch& m : found) {
    const std::vector<double> gamma = m.gamma->to_doubles(), beta = m.beta->to_doubles(), mean = m.mean->to_doubles(),
                              var = m.var->to_doubles();
    std::vector<double> scale(gamma.size()), shift(gamma.size());
    for (size_t c = 0; c < gamma.size(); ++c) {
      scale[c] = gamma[c] / std::sqrt(var[c] + m.eps);
      shift[c] = beta[c] - mean[c] * scale[c];
    }
    const Node& bn = g.nodes[m.norm];
    const std::string base = g.values[bn.outputs[0]].name;
    const DType dt = m.gamma->dtype();
    const Shape shape{static_cast<int64_t>(scale.size())};
    const int s = new_value(*out, fresh_name(*out, base + "_scale"), dt, shape);
    out->values[s].constant = Tensor::from_values(scale, shape, dt);
    const int t = new_value(*out, fresh_name(*out, base + "_shift"), dt, shape);
    out->values[t].constant = Tensor::from_values(shift, shape, dt);
    for (size_t j = 0; j < m.convs.size(); ++j) {
      const Node& n = g.nodes[m.convs[j]];
      // The first Conv's pattern takes the normalization with it (its output then unread).
      std::vector<int> nodes = j == 0 ? std::vector<int>{m.norm, m.convs[j]} : std::vector<int>{m.convs[j]};
      rewrites.push_back({std::move(nodes), op,
                          {m.x, s, t, n.inputs[1], n.inputs.size() > 2 ? n.inputs[2] : -1},
                          pre_act_attrs(bn, n), ""});
    }
  }
  return rewrite_patterns(*out, rewrites);
}

bool pre_act_conv_candidates(const Graph& g, Device device) {
  Matcher matcher(g);
  return native_match_exists(g, "ai.porta", "PreActConv", device, [&](int i) {
    auto m = matcher.match(i);
    return m ? m->x : -1;
  });
}

}  // namespace porta::detail
