// GELU rewrite (runtime/graph_fusion.hpp, fuse_gelu): PyTorch exports nn.GELU() at opsets
// 13-17, which have no Gelu op, as five elementwise nodes, each a pass over the activation:
//   d = Div(x, sqrt(2))  or  Mul(x, 1/sqrt(2))
//   e = Erf(d)
//   a = Add(e, 1)
//   y = x * a * 0.5 as Mul(Mul(x, a), 0.5), Mul(Mul(a, 0.5), x) or Mul(Mul(x, 0.5), a)
// (operands of Add and Mul in either order). nn.GELU(approximate="tanh") and the hand-written
// form of GPT-2 and its kin (0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))) have
//   e = Tanh(Mul(sqrt(2 / pi), Add(x, Mul(0.044715, x^3)))),  x^3 = Pow(x, 3) or x * (x * x)
// and the same tail. They become one Gelu node (ONNX opset 20's op, ops/bias_gelu.cpp), one
// pass, with approximate "none" or "tanh".
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

bool is_constant(const Graph& g, int v, double want) {
  std::optional<double> c = constant_scalar(g, v);
  return c && std::fabs(*c - want) <= 1e-6 * std::fabs(want);
}

// For a two-input node computing op(p, c) with c the constant `want` (either order): p, else -1.
int operand_with_constant(const Graph& g, const Node& n, double want) {
  for (int i = 0; i < 2; ++i)
    if (is_constant(g, n.inputs[1 - i], want)) return n.inputs[i];
  return -1;
}

// The other operand of a two-input node, given one of them (-1 if `v` is neither).
int other_operand(const Node& n, int v) {
  return n.inputs[0] == v ? n.inputs[1] : n.inputs[1] == v ? n.inputs[0] : -1;
}

// The dtype of a scalar constant (initializer or Constant node): x's, in Div(x, c) or Mul(x, c).
DType constant_dtype(const Graph& g, int v) {
  const Tensor* t = constant_tensor(g, v);
  return t ? t->dtype() : DType::f32;  // else a Constant node's value_float
}

struct GeluMatch {
  int x = -1;
  DType dtype = DType::f32;  // x's, from a constant of the pattern
  bool tanh = false;       // approximate "tanh"
  int center = -1;         // the Erf or Tanh node
  std::vector<int> nodes;  // the nodes that disappear; the last one becomes the Gelu
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), r_(g) {}

  // The gelu pattern around the Erf or Tanh node `center`, if the whole of it is there.
  std::optional<GeluMatch> match(int center) const {
    std::optional<GeluMatch> head = erf_head(center);
    if (!head) head = tanh_head(center);
    if (!head) return std::nullopt;
    GeluMatch m = std::move(*head);
    m.center = center;
    const int x = m.x;
    const Node& e = g_.nodes[center];
    // a = e + 1
    const int add = only_reader(e.outputs[0]);
    if (add < 0 || !is_onnx_op(g_.nodes[add], "Add", 2) || operand_with_constant(g_, g_.nodes[add], 1.0) != e.outputs[0])
      return std::nullopt;
    m.nodes.push_back(add);
    const int a = g_.nodes[add].outputs[0];
    const int m1 = only_reader(a);
    if (m1 < 0 || !is_onnx_op(g_.nodes[m1], "Mul", 2)) return std::nullopt;
    const int o1 = other_operand(g_.nodes[m1], a);
    if (o1 == x || is_constant(g_, o1, 0.5)) {  // (x * a) * 0.5 or (a * 0.5) * x
      const int m2 = only_reader(g_.nodes[m1].outputs[0]);
      if (m2 < 0 || !is_onnx_op(g_.nodes[m2], "Mul", 2)) return std::nullopt;
      const int o2 = other_operand(g_.nodes[m2], g_.nodes[m1].outputs[0]);
      if (!(o1 == x ? is_constant(g_, o2, 0.5) : o2 == x)) return std::nullopt;
      m.nodes.push_back(m1);
      m.nodes.push_back(m2);
      return m;
    }
    // (x * 0.5) * a: o1 = Mul(x, 0.5), read by m1 alone
    if (o1 < 0 || g_.values[o1].producer < 0 || !private_value(o1, m1)) return std::nullopt;
    const int half = g_.values[o1].producer;
    if (!is_onnx_op(g_.nodes[half], "Mul", 2) || operand_with_constant(g_, g_.nodes[half], 0.5) != x) return std::nullopt;
    m.nodes.push_back(half);
    m.nodes.push_back(m1);
    return m;
  }

  // Erf(x / sqrt 2) or Erf(x * (1 / sqrt 2)).
  std::optional<GeluMatch> erf_head(int erf) const {
    const Node& e = g_.nodes[erf];
    if (!is_onnx_op(e, "Erf", 1) || !private_value(e.inputs[0], erf)) return std::nullopt;
    const int d = e.inputs[0];
    if (g_.values[d].producer < 0) return std::nullopt;
    const int div = g_.values[d].producer;
    const Node& dn = g_.nodes[div];
    int x = -1;
    if (is_onnx_op(dn, "Div", 2) && is_constant(g_, dn.inputs[1], std::numbers::sqrt2)) x = dn.inputs[0];
    else if (is_onnx_op(dn, "Mul", 2)) x = operand_with_constant(g_, dn, 1.0 / std::numbers::sqrt2);
    if (x < 0) return std::nullopt;
    GeluMatch m;
    m.x = x;
    m.dtype = constant_dtype(g_, other_operand(dn, x));
    m.nodes = {div, erf};
    return m;
  }

  // Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)), every intermediate read by the next node alone.
  std::optional<GeluMatch> tanh_head(int tanh) const {
    const Node& t = g_.nodes[tanh];
    if (!is_onnx_op(t, "Tanh", 1)) return std::nullopt;
    const int scaled = private_producer(t.inputs[0], tanh, "Mul");
    if (scaled < 0) return std::nullopt;
    const int sum = operand_with_constant(g_, g_.nodes[scaled], std::sqrt(2.0 / std::numbers::pi));
    const int add = private_producer(sum, scaled, "Add");
    if (add < 0) return std::nullopt;
    for (int i = 0; i < 2; ++i) {  // Add(x, k * x^3) in either order
      const int x = g_.nodes[add].inputs[i], kc = g_.nodes[add].inputs[1 - i];
      const int kmul = private_producer(kc, add, "Mul");
      if (x < 0 || kmul < 0) continue;
      const int cube = operand_with_constant(g_, g_.nodes[kmul], 0.044715);
      std::vector<int> cube_nodes = cube_of(cube, x, kmul);
      if (cube_nodes.empty()) continue;
      GeluMatch m;
      m.x = x;
      m.tanh = true;
      m.dtype = constant_dtype(g_, other_operand(g_.nodes[scaled], sum));
      m.nodes = cube_nodes;
      for (int k : {kmul, add, scaled, tanh}) m.nodes.push_back(k);
      return m;
    }
    return std::nullopt;
  }

  // The nodes computing c = x^3 (Pow(x, 3), or x * (x * x) in either order), read by `reader`
  // alone; empty when c is not that.
  std::vector<int> cube_of(int c, int x, int reader) const {
    const int p = private_producer(c, reader, nullptr);
    if (p < 0) return {};
    const Node& n = g_.nodes[p];
    if (is_onnx_op(n, "Pow", 2) && n.inputs[0] == x && is_constant(g_, n.inputs[1], 3.0)) return {p};
    if (!is_onnx_op(n, "Mul", 2)) return {};
    const int sq = other_operand(n, x);
    const int q = private_producer(sq, p, "Mul");
    if (q < 0 || g_.nodes[q].inputs[0] != x || g_.nodes[q].inputs[1] != x) return {};
    return {q, p};
  }

  // The node producing v when v is read by `reader` alone (and is no graph output) and the node
  // is `op` with two inputs (any op when null); else -1.
  int private_producer(int v, int reader, const char* op) const {
    if (v < 0 || !private_value(v, reader) || g_.values[v].producer < 0) return -1;
    const int p = g_.values[v].producer;
    return op && !is_onnx_op(g_.nodes[p], op, 2) ? -1 : p;
  }

 private:
  int only_reader(int v) const { return r_.only_reader(v); }
  bool private_value(int v, int reader) const { return only_reader(v) == reader; }

  const Graph& g_;
  ValueReaders r_;
};

// "<scope>/Erf" or "<scope>/Tanh" -> "<scope>/Gelu": the fused node keeps the pattern's place in
// profiles.
std::string gelu_name(const std::string& center) {
  for (const std::string tail : {"Erf", "Tanh"})
    if (center.size() >= tail.size() && center.compare(center.size() - tail.size(), tail.size(), tail) == 0)
      return center.substr(0, center.size() - tail.size()) + "Gelu";
  return center + "/Gelu";
}

}  // namespace

std::shared_ptr<const Graph> fuse_gelu(const std::shared_ptr<const Graph>& graph, Device device, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* gelu = find_op("", "Gelu");
  if (!gelu) return graph;
  const Graph& g = *graph;
  Matcher matcher(g);
  std::vector<GeluMatch> matches;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<GeluMatch> m = matcher.match(static_cast<int>(i));
    if (!m) continue;
    // Only where the device runs Gelu itself for x's dtype: elsewhere it would decompose back.
    if (resolve(*gelu, device, m->dtype).path != Path::native) continue;
    matches.push_back(std::move(*m));
  }
  if (matches.empty()) return graph;
  std::vector<PatternRewrite> rewrites;
  for (const GeluMatch& m : matches)  // the last node comes after every other of the pattern
    rewrites.push_back({m.nodes, gelu, {m.x}, Attributes{{"approximate", std::string(m.tanh ? "tanh" : "none")}},
                        gelu_name(g.nodes[m.center].name)});
  return rewrite_patterns(g, rewrites);
}

}  // namespace porta::detail
