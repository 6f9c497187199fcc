// RMS-norm-into-product rewrite (runtime/graph_fusion.hpp, fuse_rms_norm_matmul): in LLaMA-style
// transformers an RMSNorm (one RmsNorm node by now, runtime/layer_norm_fusion.cpp) is read by
// projections alone: MatMuls by constant weights (one packed q/k/v projection, or three; the
// output head) or the feed-forward layer (one GatedLinear by now). Each such MatMul becomes one
// RmsNormMatMul (ai.porta, ops/rms_norm_matmul.cpp) of the norm's input and each GatedLinear
// reads that input with `rms_epsilon` set, their weights with the norm's Scale folded into
// their rows, where the device runs them natively at the plan's shapes: the product's kernel
// sums the squares of the rows it reads anyway, and the normalized rows are never written (nor
// is the norm dispatched).
#include <algorithm>
#include <optional>
#include <vector>

#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

// An RmsNorm and the MatMuls that read it: each becomes an RmsNormMatMul of the norm's X.
struct RmsMatMulMatch {
  int norm = -1, x = -1;
  double eps = 0;                 // the norm's epsilon
  const Tensor* scale = nullptr;  // its Scale (a constant of the graph)
  struct Product {
    int node = -1, w = -1, bias = -1;
    bool gated = false;  // a GatedLinear: w its Wg, w2 its Wu (the op keeps its node)
    int w2 = -1;
    const Tensor* weight = nullptr;   // w's constant
    const Tensor* weight2 = nullptr;  // w2's (gated)
  };
  std::vector<Product> products;  // in node order
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), r_(g) {}

  // The pairs whose RmsNorm is node `k`, if every reader of the norm is such a MatMul.
  std::optional<RmsMatMulMatch> match(int k) const {
    const Node& norm = g_.nodes[k];
    if (norm.op->domain != "ai.porta" || norm.op->name != "RmsNorm" || norm.inputs.size() != 2 ||
        norm.outputs.size() != 1 || norm.outputs[0] < 0 || norm.inputs[0] < 0 || norm.inputs[1] < 0)
      return std::nullopt;
    const int y = norm.outputs[0];
    if (r_.is_output[y] || r_.readers[y].empty()) return std::nullopt;
    RmsMatMulMatch m;
    m.norm = k, m.x = norm.inputs[0];
    m.eps = norm.attrs.get_float("epsilon", 1e-6);
    const Tensor* scale = m.scale = constant_tensor(g_, through_identities(g_, norm.inputs[1]));
    const DType dt = dtype_of(g_, m.x);
    if (!scale || scale->rank() != 1 || scale->dtype() != dt || (dt != DType::f32 && dt != DType::f16))
      return std::nullopt;
    std::vector<int> readers = r_.readers[y];
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
    for (int p : readers) {
      const Node& mm = g_.nodes[p];
      if (mm.op->domain == "ai.porta" && mm.op->name == "GatedLinear") {
        // LLaMA's feed-forward layer (one GatedLinear by now): X normalized first.
        if (mm.inputs.size() < 3 || mm.inputs[0] != y || mm.inputs[1] == y || mm.inputs[2] == y ||
            mm.attrs.get_float("rms_epsilon", -1.0) >= 0)
          return std::nullopt;
        for (size_t i = 3; i < mm.inputs.size(); ++i)
          if (mm.inputs[i] == y || (mm.inputs[i] >= 0 && dtype_of(g_, mm.inputs[i]) != dt)) return std::nullopt;
        RmsMatMulMatch::Product prod{p, mm.inputs[1], -1, true, mm.inputs[2]};
        prod.weight = weight(prod.w, *scale, dt);
        prod.weight2 = weight(prod.w2, *scale, dt);
        if (!prod.weight || !prod.weight2) return std::nullopt;
        m.products.push_back(prod);
        continue;
      }
      if (!is_onnx_op(mm, "MatMul") || mm.inputs.size() < 2 || mm.inputs.size() > 3 || mm.inputs[0] != y ||
          mm.inputs[1] == y || mm.inputs[1] < 0)
        return std::nullopt;
      // Nothing fused into the product but a bias: an activation or a residual would apply
      // after the norm's scaling of the sums, which the op has no place for.
      if (!mm.attrs.get_string("porta_activation", "").empty() || mm.attrs.has("porta_residual")) return std::nullopt;
      RmsMatMulMatch::Product prod{p, mm.inputs[1], mm.inputs.size() > 2 ? mm.inputs[2] : -1};
      prod.weight = weight(prod.w, *scale, dt);
      if (!prod.weight || (prod.bias >= 0 && dtype_of(g_, prod.bias) != dt)) return std::nullopt;
      m.products.push_back(prod);
    }
    return m;
  }

 private:
  // Value `v`'s constant (through Identity nodes) when it is a weight the norm's rows can
  // multiply: 2-D, Scale's length rows, the norm's dtype.
  const Tensor* weight(int v, const Tensor& scale, DType dt) const {
    const Tensor* w = constant_tensor(g_, through_identities(g_, v));
    return w && w->rank() == 2 && w->dim(0) == scale.dim(0) && w->dtype() == dt ? w : nullptr;
  }

  const Graph& g_;
  ValueReaders r_;
};

// W with row k multiplied by Scale[k], in W's dtype (rounded once, from float64).
Tensor scaled_rows(const Tensor& scale, const Tensor& w) {
  const std::vector<double> s = scale.to_doubles();
  std::vector<double> v = w.to_doubles();
  const int64_t K = w.dim(0), N = w.dim(1);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) v[static_cast<size_t>(k * N + n)] *= s[static_cast<size_t>(k)];
  return Tensor::from_values(v, w.shape(), w.dtype());
}

}  // namespace

std::shared_ptr<const Graph> fuse_rms_norm_matmul(const std::shared_ptr<const Graph>& graph, Device device,
                                                  bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* op = find_op("ai.porta", "RmsNormMatMul");
  if (!op) return graph;
  const Graph& g = *graph;
  Matcher matcher(g);
  const OpSchema* glu = find_op("ai.porta", "GatedLinear");
  std::vector<RmsMatMulMatch> found;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<RmsMatMulMatch> m = matcher.match(static_cast<int>(i));
    if (!m) continue;
    // Every product or none: the norm's dispatch goes only if no reader needs its output.
    // Only where the device runs each op itself at these shapes (elsewhere it would decompose
    // back), asked with the model's weights: the folded ones have their shapes and dtype.
    bool all = true;
    for (const RmsMatMulMatch::Product& p : m->products) {
      const Node& n = g.nodes[p.node];
      if (p.gated) {
        Attributes a = n.attrs;
        a.set("rms_epsilon", m->eps);
        all = all && glu && resolve(*glu, device, dtype_of(g, m->x)).path == Path::native &&
              native_for_shapes(g, *glu, n.inputs, a, n.outputs[0], device);
      } else {
        Attributes a;
        a.set("epsilon", m->eps);
        all = all && resolve(*op, device, dtype_of(g, m->x)).path == Path::native &&
              native_for_shapes(g, *op, {m->x, p.w, p.bias}, a, n.outputs[0], device);
      }
    }
    if (all) found.push_back(std::move(*m));
  }
  if (found.empty()) return graph;
  auto out = std::make_shared<Graph>(g);
  std::vector<PatternRewrite> rewrites;
  for (const RmsMatMulMatch& m : found) {
    auto fold = [&](int w_value, const Tensor& w) {
      const int folded = new_value(*out, g.values[w_value].name + "_rms_scaled", w.dtype(), w.shape());
      out->values[folded].constant = scaled_rows(*m.scale, w);
      return folded;
    };
    for (size_t j = 0; j < m.products.size(); ++j) {
      const RmsMatMulMatch::Product& p = m.products[j];
      // The first product's pattern takes the norm with it (its output then unread).
      std::vector<int> nodes = j == 0 ? std::vector<int>{m.norm, p.node} : std::vector<int>{p.node};
      const Node& n = g.nodes[p.node];
      if (p.gated) {
        std::vector<int> inputs = n.inputs;
        inputs[0] = m.x;
        inputs[1] = fold(p.w, *p.weight);
        inputs[2] = fold(p.w2, *p.weight2);
        Attributes a = n.attrs;
        a.set("rms_epsilon", m.eps);
        rewrites.push_back({std::move(nodes), glu, std::move(inputs), std::move(a), ""});
      } else {
        Attributes a;
        a.set("epsilon", m.eps);
        rewrites.push_back({std::move(nodes), op, {m.x, fold(p.w, *p.weight), p.bias}, std::move(a), ""});
      }
    }
  }
  return rewrite_patterns(*out, rewrites);
}

bool rms_norm_matmul_candidates(const Graph& g, Device device) {
  const OpSchema* op = find_op("ai.porta", "RmsNormMatMul");
  if (!op || !fusion_enabled()) return false;
  bool norm = norm_candidates(g), product = false;
  for (const Node& n : g.nodes) {
    norm = norm || (n.op->domain == "ai.porta" && n.op->name == "RmsNorm");
    product = product || is_onnx_op(n, "MatMul");
  }
  return norm && product && (resolve(*op, device, DType::f32).path == Path::native ||
                             resolve(*op, device, DType::f16).path == Path::native);
}

}  // namespace porta::detail
