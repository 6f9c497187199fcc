// Squeeze-and-excitation rewrite (runtime/graph_fusion.hpp, fuse_squeeze_excite): MobileNetV3,
// EfficientNet, RegNetY and most mobile CNNs since export each SE block as four nodes,
//   p = GlobalAveragePool(x)   (or ReduceMean over every spatial axis, keepdims)
//   h = Conv(p, W1, B1)        1x1, with its activation fused (runtime/graph_fusion.cpp)
//   s = Conv(h, W2, B2)        1x1, with its gate (Sigmoid, HardSigmoid) fused
//   y = Mul(x, s)              (either operand order)
// four dispatches where three of them work on a vector per image. They become one
// SqueezeExcite (ai.porta, ops/squeeze_excite.cpp) where the device runs it natively.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

struct SqueezeExciteMatch {
  int x = -1, w1 = -1, b1 = -1, w2 = -1, b2 = -1;
  std::vector<int> nodes;  // the pooling, the two Convs, the Mul
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), r_(g) {}

  // The block whose pooling is node `first`, if all of it is there. x's rank is taken from the
  // first Conv's weight (a constant's shape is known before the session binds input shapes;
  // a Conv whose weight has another rank than its input fails either way: SqueezeExcite's
  // inference checks it too).
  std::optional<SqueezeExciteMatch> match(int first) const {
    const Node& pool = g_.nodes[first];
    if (pool.inputs.empty() || pool.outputs.size() != 1 || pool.outputs[0] < 0) return std::nullopt;
    SqueezeExciteMatch m;
    m.x = pool.inputs[0];
    const DType dt = dtype_of(g_, m.x);
    if (dt != DType::f32 && dt != DType::f16) return std::nullopt;
    const int c1 = pointwise_conv(r_.only_reader(pool.outputs[0]), pool.outputs[0], dt);
    if (c1 < 0) return std::nullopt;
    const Shape& w1 = *known_shape(g_, g_.nodes[c1].inputs[1]);
    if (!spatial_mean(pool, static_cast<int64_t>(w1.size()))) return std::nullopt;
    const int c2 = pointwise_conv(r_.only_reader(g_.nodes[c1].outputs[0]), g_.nodes[c1].outputs[0], dt);
    if (c2 < 0) return std::nullopt;
    const int s = g_.nodes[c2].outputs[0];
    const int mul = r_.only_reader(s);
    if (mul < 0 || !is_onnx_op(g_.nodes[mul], "Mul", 2)) return std::nullopt;
    const std::vector<int>& mi = g_.nodes[mul].inputs;
    if (!((mi[0] == m.x && mi[1] == s) || (mi[0] == s && mi[1] == m.x))) return std::nullopt;
    const Node &n1 = g_.nodes[c1], &n2 = g_.nodes[c2];
    m.w1 = n1.inputs[1];
    m.b1 = n1.inputs.size() > 2 ? n1.inputs[2] : -1;
    m.w2 = n2.inputs[1];
    m.b2 = n2.inputs.size() > 2 ? n2.inputs[2] : -1;
    // W1: R x C x 1..., W2: C x R x 1... (pointwise_conv checked the ones).
    const Shape& w2 = *known_shape(g_, m.w2);
    if (w2.size() != w1.size() || w1[0] != w2[1] || w2[0] != w1[1]) return std::nullopt;
    m.nodes = {first, c1, c2, mul};
    return m;
  }

 private:
  // GlobalAveragePool, or ReduceMean keeping its axes over exactly axes 2 .. rank-1 (as an
  // attribute, or opset 18's constant input).
  bool spatial_mean(const Node& n, int64_t rank) const {
    if (is_onnx_op(n, "GlobalAveragePool", 1)) return true;
    if (!is_onnx_op(n, "ReduceMean") || n.attrs.get_int("keepdims", 1) != 1) return false;
    std::vector<int64_t> axes;
    if (n.inputs.size() == 2 && n.inputs[1] >= 0) {
      const Tensor* t = constant_tensor(g_, n.inputs[1]);
      if (!t || t->dtype() != DType::i64 || t->rank() != 1) return false;
      for (int64_t i = 0; i < t->numel(); ++i) axes.push_back(t->data<int64_t>()[i]);
    } else if (n.inputs.size() == 1) {
      axes = n.attrs.get_ints("axes", {});
    } else {
      return false;
    }
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
      if (a < 0) a += rank;
      if (a < 2 || a >= rank || seen[static_cast<size_t>(a)]) return false;
      seen[static_cast<size_t>(a)] = true;
    }
    return static_cast<int64_t>(axes.size()) == rank - 2;
  }

  // Node `k` when it is a pointwise Conv of `in` (pointwise_conv_weight) in dtype `dt`; else
  // -1. Over a 1x1 map any stride and dilation leave one output position.
  int pointwise_conv(int k, int in, DType dt) const {
    return k >= 0 && pointwise_conv_weight(g_, g_.nodes[k], in, dt) ? k : -1;
  }

  const Graph& g_;
  ValueReaders r_;
};

}  // namespace

std::shared_ptr<const Graph> fuse_squeeze_excite(const std::shared_ptr<const Graph>& graph, Device device,
                                                 bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* se = find_op("ai.porta", "SqueezeExcite");
  if (!se) return graph;
  const Graph& g = *graph;
  Matcher matcher(g);
  std::vector<PatternRewrite> rewrites;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<SqueezeExciteMatch> m = matcher.match(static_cast<int>(i));
    // Only where the device runs the op itself: elsewhere it would decompose back.
    if (!m || resolve(*se, device, dtype_of(g, m->x)).path != Path::native) continue;
    Attributes a;
    copy_fused_activation(g.nodes[m->nodes[1]].attrs, a, "activation");
    copy_fused_activation(g.nodes[m->nodes[2]].attrs, a, "gate");
    const std::vector<int> inputs{m->x, m->w1, m->b1, m->w2, m->b2};
    if (!native_for_shapes(g, *se, inputs, a, g.nodes[m->nodes.back()].outputs[0], device)) continue;
    rewrites.push_back({m->nodes, se, inputs, std::move(a), ""});
  }
  if (rewrites.empty()) return graph;
  return rewrite_patterns(g, rewrites);
}

bool squeeze_excite_candidates(const Graph& g, Device device) {
  Matcher matcher(g);
  return native_match_exists(g, "ai.porta", "SqueezeExcite", device, [&](int i) {
    auto m = matcher.match(i);
    return m ? m->x : -1;
  });
}

}  // namespace porta::detail
