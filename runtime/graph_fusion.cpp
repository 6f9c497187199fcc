// porta runtime — Conv + BatchNormalization folding and activation fusion (contracts in
// graph_fusion.hpp). Exported CNNs in eval mode keep BatchNormalization after every Conv when
// exported with training=PRESERVE, and nearly every Conv is followed by Relu; each rewrite
// removes one full pass over the activation per block.
#include "runtime/graph_fusion.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace porta::detail {

bool fusion_enabled() {
  const char* v = std::getenv("PORTA_FUSE");
  return !(v && std::string(v) == "0");
}

namespace {

bool f32_constant(const Graph& g, int v) {
  return v >= 0 && g.values[v].constant.defined() && g.values[v].constant.dtype() == DType::f32;
}

// Number of node inputs reading each value.
std::vector<int> consumer_counts(const Graph& g) {
  std::vector<int> n(g.values.size(), 0);
  for (const Node& node : g.nodes)
    for (int v : node.inputs)
      if (v >= 0) ++n[v];
  return n;
}

// The BatchNormalization node reading the Conv at `conv` when the pair folds, else -1.
int foldable_batch_norm(const Graph& g, size_t conv, const std::vector<int>& consumers,
                        const std::vector<bool>& is_output) {
  const Node& c = g.nodes[conv];
  if (c.op->name != "Conv" || !c.op->domain.empty() || c.outputs.size() != 1 || c.outputs[0] < 0) return -1;
  if (c.inputs.size() < 2 || !f32_constant(g, c.inputs[1])) return -1;
  if (c.inputs.size() > 2 && c.inputs[2] >= 0 && !f32_constant(g, c.inputs[2])) return -1;
  int y = c.outputs[0];
  if (consumers[y] != 1 || is_output[y]) return -1;
  const Tensor& w = g.values[c.inputs[1]].constant;
  if (w.rank() < 3) return -1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& bn = g.nodes[i];
    if (bn.inputs.empty() || bn.inputs[0] != y) continue;
    if (bn.op->name != "BatchNormalization" || !bn.op->domain.empty()) return -1;
    if (bn.inputs.size() != 5 || bn.outputs.empty() || bn.outputs[0] < 0) return -1;
    for (size_t k = 1; k < bn.outputs.size(); ++k)
      if (bn.outputs[k] >= 0) return -1;
    if (bn.attrs.get_int("training_mode", 0) != 0) return -1;
    for (int k = 1; k < 5; ++k) {
      if (!f32_constant(g, bn.inputs[k])) return -1;
      const Tensor& p = g.values[bn.inputs[k]].constant;
      if (p.rank() != 1 || p.dim(0) != w.dim(0)) return -1;
    }
    return static_cast<int>(i);
  }
  return -1;
}

// Drops the nodes marked in `drop` and renumbers every value's producer.
void drop_nodes(Graph& g, const std::vector<bool>& drop) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  for (Value& v : g.values) v.producer = -1;  // values orphaned by a rewrite have none
  for (size_t i = 0; i < g.nodes.size(); ++i)  // producers index the new node list
    for (int v : g.nodes[i].outputs)
      if (v >= 0) g.values[v].producer = static_cast<int>(i);
}

// Whether every kernel that may run `op` for `dtype` on `device` applies `activation` itself:
// the device's kernels (at least one), and the cpu's, which take the calls they decline.
bool kernels_fuse(const OpSchema& op, DType dtype, Device device, const std::string& activation) {
  bool native = false;
  for (const KernelDef* k : kernels_for(op.name)) {
    if (!dtype_in(k->dtypes, dtype) || (k->backend != device.type && k->backend != DeviceType::cpu)) continue;
    native |= k->backend == device.type;
    if (std::find(k->fused_activations.begin(), k->fused_activations.end(), activation) == k->fused_activations.end())
      return false;
  }
  return native;
}

bool has_activation_attr(const OpSchema& op) {
  for (const AttrDef& a : op.attrs)
    if (a.name == "porta_activation") return true;
  return false;
}

// The activation node reading the node at `producer` when the pair fuses on `device`, else -1.
int fusable_activation(const Graph& g, size_t producer, Device device, const std::vector<int>& consumers,
                       const std::vector<bool>& is_output) {
  const Node& c = g.nodes[producer];
  if (!has_activation_attr(*c.op) || c.outputs.size() != 1 || c.outputs[0] < 0 || c.inputs.empty()) return -1;
  if (!c.attrs.get_string("porta_activation", "").empty()) return -1;
  int y = c.outputs[0];
  if (consumers[y] != 1 || is_output[y]) return -1;
  int dispatch = c.op->dispatch_input < 0 ? -1 : c.inputs.at(std::min<size_t>(c.op->dispatch_input, c.inputs.size() - 1));
  DType dtype = dispatch >= 0 ? g.values[dispatch].dtype : g.values[y].dtype;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& r = g.nodes[i];
    if (std::find(r.inputs.begin(), r.inputs.end(), y) == r.inputs.end()) continue;
    if (!r.op->domain.empty() || r.inputs.size() != 1 || r.outputs.size() != 1 || r.outputs[0] < 0) return -1;
    return kernels_fuse(*c.op, dtype, device, r.op->name) ? static_cast<int>(i) : -1;
  }
  return -1;
}

}  // namespace

std::shared_ptr<const Graph> fuse_activations(const std::shared_ptr<const Graph>& graph, Device device,
                                              bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[v] = true;
  std::vector<std::pair<size_t, int>> pairs;  // (producer node, activation node)
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int act = fusable_activation(g, i, device, consumers, is_output);
    if (act >= 0) pairs.emplace_back(i, act);
  }
  if (pairs.empty()) return graph;
  auto out = std::make_shared<Graph>(g);
  std::vector<bool> drop(out->nodes.size(), false);
  for (auto [producer_index, act_index] : pairs) {
    Node& producer = out->nodes[producer_index];
    producer.attrs.set("porta_activation", out->nodes[act_index].op->name);
    producer.outputs[0] = out->nodes[act_index].outputs[0];  // the producer's own output value is orphaned
    drop[act_index] = true;
  }
  drop_nodes(*out, drop);
  return out;
}

std::shared_ptr<const Graph> fold_conv_batch_norm(const std::shared_ptr<const Graph>& graph) {
  if (!graph || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[v] = true;
  std::vector<std::pair<size_t, int>> pairs;  // (conv node, batch norm node)
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int bn = foldable_batch_norm(g, i, consumers, is_output);
    if (bn >= 0) pairs.emplace_back(i, bn);
  }
  if (pairs.empty()) return graph;

  auto out = std::make_shared<Graph>(g);
  std::vector<bool> drop(out->nodes.size(), false);
  for (auto [conv_index, bn_index] : pairs) {
    Node& conv = out->nodes[conv_index];
    const Node& bn = out->nodes[bn_index];
    const Tensor w = out->values[conv.inputs[1]].constant.contiguous();
    const int64_t m = w.dim(0), per_channel = w.numel() / std::max<int64_t>(m, 1);
    const Tensor* bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0 ? &out->values[conv.inputs[2]].constant : nullptr;
    auto param = [&](int k) { return out->values[bn.inputs[k]].constant.contiguous(); };
    Tensor scale = param(1), shift = param(2), mean = param(3), var = param(4);
    double eps = bn.attrs.get_float("epsilon", 1e-5);
    Tensor w2 = Tensor::empty(w.shape(), DType::f32), b2 = Tensor::empty({m}, DType::f32);
    Tensor b0 = bias ? bias->contiguous() : Tensor();
    for (int64_t c = 0; c < m; ++c) {
      double a = static_cast<double>(scale.data<float>()[c]) /
                 std::sqrt(static_cast<double>(var.data<float>()[c]) + eps);
      for (int64_t j = 0; j < per_channel; ++j)
        w2.data<float>()[c * per_channel + j] = static_cast<float>(w.data<float>()[c * per_channel + j] * a);
      double b = bias ? static_cast<double>(b0.data<float>()[c]) : 0.0;
      b2.data<float>()[c] = static_cast<float>((b - mean.data<float>()[c]) * a + shift.data<float>()[c]);
    }
    int wv = out->add_value(conv.name + "/folded_weight");
    out->values[wv].constant = w2;
    out->values[wv].dtype = DType::f32;
    out->values[wv].shape = w2.shape();
    out->values[wv].shape_known = true;
    int bv = out->add_value(conv.name + "/folded_bias");
    out->values[bv].constant = b2;
    out->values[bv].dtype = DType::f32;
    out->values[bv].shape = b2.shape();
    out->values[bv].shape_known = true;
    int y = bn.outputs[0];
    conv.inputs.resize(3);
    conv.inputs[1] = wv;
    conv.inputs[2] = bv;
    conv.outputs[0] = y;
    out->values[y].producer = static_cast<int>(conv_index);
    drop[bn_index] = true;
  }
  drop_nodes(*out, drop);
  return out;
}

}  // namespace porta::detail
