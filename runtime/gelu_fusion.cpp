// GELU rewrite (runtime/graph_fusion.hpp, fuse_gelu): PyTorch exports nn.GELU() at opsets
// 13-17, which have no Gelu op, as five elementwise nodes, each a pass over the activation:
//   d = Div(x, sqrt(2))  or  Mul(x, 1/sqrt(2))
//   e = Erf(d)
//   a = Add(e, 1)
//   y = x * a * 0.5 as Mul(Mul(x, a), 0.5), Mul(Mul(a, 0.5), x) or Mul(Mul(x, 0.5), a)
// (operands of Add and Mul in either order). They become one Gelu node (ONNX opset 20's op,
// ops/bias_gelu.cpp), one pass.
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

bool is_op(const Node& n, const char* name, size_t inputs) {
  return n.op->domain.empty() && n.op->name == name && n.inputs.size() == inputs && n.outputs.size() == 1 &&
         n.outputs[0] >= 0;
}

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
  DType dtype = DType::f32;  // x's, from the constant it is divided by
  std::vector<int> nodes;  // the nodes that disappear; the last one becomes the Gelu
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), readers_(g.values.size()), is_output_(g.values.size(), false) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (int v : g.nodes[i].inputs)
        if (v >= 0) readers_[v].push_back(static_cast<int>(i));
    for (int v : g.outputs) is_output_[v] = true;
  }

  // The gelu pattern around the Erf node `erf`, if the whole of it is there.
  std::optional<GeluMatch> match(int erf) const {
    const Node& e = g_.nodes[erf];
    if (!is_op(e, "Erf", 1) || !private_value(e.inputs[0], erf)) return std::nullopt;
    const int d = e.inputs[0];
    if (g_.values[d].producer < 0) return std::nullopt;
    const int div = g_.values[d].producer;
    const Node& dn = g_.nodes[div];
    int x = -1;
    if (is_op(dn, "Div", 2) && is_constant(g_, dn.inputs[1], std::numbers::sqrt2)) x = dn.inputs[0];
    else if (is_op(dn, "Mul", 2)) x = operand_with_constant(g_, dn, 1.0 / std::numbers::sqrt2);
    if (x < 0) return std::nullopt;
    GeluMatch m;
    m.x = x;
    m.dtype = constant_dtype(g_, other_operand(dn, x));
    m.nodes = {div, erf};
    // a = e + 1
    const int add = only_reader(e.outputs[0]);
    if (add < 0 || !is_op(g_.nodes[add], "Add", 2) || operand_with_constant(g_, g_.nodes[add], 1.0) != e.outputs[0])
      return std::nullopt;
    m.nodes.push_back(add);
    const int a = g_.nodes[add].outputs[0];
    const int m1 = only_reader(a);
    if (m1 < 0 || !is_op(g_.nodes[m1], "Mul", 2)) return std::nullopt;
    const int o1 = other_operand(g_.nodes[m1], a);
    if (o1 == x || is_constant(g_, o1, 0.5)) {  // (x * a) * 0.5 or (a * 0.5) * x
      const int m2 = only_reader(g_.nodes[m1].outputs[0]);
      if (m2 < 0 || !is_op(g_.nodes[m2], "Mul", 2)) return std::nullopt;
      const int o2 = other_operand(g_.nodes[m2], g_.nodes[m1].outputs[0]);
      if (!(o1 == x ? is_constant(g_, o2, 0.5) : o2 == x)) return std::nullopt;
      m.nodes.push_back(m1);
      m.nodes.push_back(m2);
      return m;
    }
    // (x * 0.5) * a: o1 = Mul(x, 0.5), read by m1 alone
    if (o1 < 0 || g_.values[o1].producer < 0 || !private_value(o1, m1)) return std::nullopt;
    const int half = g_.values[o1].producer;
    if (!is_op(g_.nodes[half], "Mul", 2) || operand_with_constant(g_, g_.nodes[half], 0.5) != x) return std::nullopt;
    m.nodes.push_back(half);
    m.nodes.push_back(m1);
    return m;
  }

 private:
  // The node reading v, when exactly one node reads it once and it is no graph output; else -1.
  int only_reader(int v) const {
    if (v < 0 || is_output_[v] || readers_[v].size() != 1) return -1;
    return readers_[v][0];
  }
  bool private_value(int v, int reader) const { return only_reader(v) == reader; }

  const Graph& g_;
  std::vector<std::vector<int>> readers_;
  std::vector<bool> is_output_;
};

// "<scope>/Erf" -> "<scope>/Gelu": the fused node keeps the pattern's place in profiles.
std::string gelu_name(const std::string& erf) {
  const std::string tail = "Erf";
  if (erf.size() >= tail.size() && erf.compare(erf.size() - tail.size(), tail.size(), tail) == 0)
    return erf.substr(0, erf.size() - tail.size()) + "Gelu";
  return erf + "/Gelu";
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
    rewrites.push_back({m.nodes, gelu, {m.x}, Attributes{}, gelu_name(g.nodes[m.nodes[1]].name)});
  return rewrite_patterns(g, rewrites);
}

}  // namespace porta::detail
