// MatMul + bias rewrite (runtime/graph_fusion.hpp, fuse_matmul_bias): PyTorch exports
// nn.Linear over inputs of rank 3 or more (a transformer's [batch, tokens, features]) as
// MatMul(x, W^T) followed by Add(., b), a second pass over the product. The Add of a constant
// row becomes the MatMul's porta-internal input `porta_bias` (ops/matmul.cpp), which the
// kernel adds while the product is still in registers or cache.
#include <algorithm>
#include <vector>

#include "runtime/eager.hpp"
#include "runtime/graph_fusion.hpp"
#include "runtime/registry.hpp"

namespace porta::detail {
namespace {

// The Add whose constant row fuses into the MatMul at `mm`: {add node, bias value}, or none.
std::optional<std::pair<size_t, int>> bias_add(const Graph& g, size_t mm, Device device,
                                               const std::vector<int>& consumers, const std::vector<bool>& is_output) {
  const Node& m = g.nodes[mm];
  if (m.op->name != "MatMul" || !m.op->domain.empty() || m.inputs.size() != 2 || m.op->inputs.size() < 3 ||
      m.outputs.size() != 1 || m.outputs[0] < 0 || m.inputs[0] < 0 || m.inputs[1] < 0)
    return std::nullopt;
  const int y = m.outputs[0];
  if (is_output[y] || consumers[y] != 1) return std::nullopt;
  // The product's columns: B's last axis, known when B is a constant (also one PyTorch's export
  // shares through Identity nodes, as a second layer's weight) or its shape was inferred.
  int b_source = m.inputs[1];
  for (int p = g.values[b_source].producer; p >= 0 && !g.values[b_source].shape_known; p = g.values[b_source].producer) {
    const Node& n = g.nodes[p];
    if (n.op->name != "Identity" || !n.op->domain.empty() || n.inputs.size() != 1 || n.inputs[0] < 0) break;
    b_source = n.inputs[0];
  }
  const Value& b = g.values[b_source];
  const Shape& b_shape = b.constant.defined() ? b.constant.shape() : b.shape;
  if ((!b.constant.defined() && !b.shape_known) || b_shape.size() < 2 || b_shape.back() < 0) return std::nullopt;
  size_t add = g.nodes.size();
  for (size_t i = mm + 1; i < g.nodes.size() && add == g.nodes.size(); ++i)
    if (std::find(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end(), y) != g.nodes[i].inputs.end()) add = i;
  if (add == g.nodes.size()) return std::nullopt;
  const Node& a = g.nodes[add];
  if (a.op->name != "Add" || !a.op->domain.empty() || a.inputs.size() != 2 || a.outputs.size() != 1 ||
      a.outputs[0] < 0 || a.inputs[0] == a.inputs[1])
    return std::nullopt;
  const int c = through_identities(g, a.inputs[0] == y ? a.inputs[1] : a.inputs[0]);
  // A 1-D row of one value per column: broadcasting it over the product keeps the product's
  // shape, so the Add's output is the biased product exactly.
  const Tensor* row = constant_tensor(g, c);
  if (!row || row->rank() != 1 || row->dim(0) != b_shape.back()) return std::nullopt;
  const DType dtype = b.constant.defined() ? b.constant.dtype() : b.dtype;
  if (row->dtype() != dtype || !dtype_in(kFloats, dtype)) return std::nullopt;
  if (!every_kernel_declares(*m.op, dtype, device,
                             [](const KernelDef& k) { return kernel_fuses(k, "porta_bias"); }))
    return std::nullopt;
  return std::make_pair(add, c);
}

}  // namespace

std::shared_ptr<const Graph> fuse_matmul_bias(const std::shared_ptr<const Graph>& graph, Device device, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output = graph_output_flags(g);
  std::shared_ptr<Graph> out;
  std::vector<bool> drop(g.nodes.size(), false), taken(g.nodes.size(), false);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    auto f = bias_add(g, k, device, consumers, is_output);
    if (!f || taken[f->first]) continue;
    taken[f->first] = true;
    if (!out) out = std::make_shared<Graph>(g);
    Node fused = out->nodes[k];
    fused.inputs.push_back(f->second);
    fused.outputs[0] = out->nodes[f->first].outputs[0];  // the MatMul's own output is orphaned
    out->nodes[f->first] = std::move(fused);  // in the Add's place: a Constant bias exists by then
    drop[k] = true;
    // Identity nodes between the bias and the Add that nothing else reads go too.
    for (int v = g.nodes[f->first].inputs[0] == g.nodes[k].outputs[0] ? g.nodes[f->first].inputs[1]
                                                                         : g.nodes[f->first].inputs[0];
         v != f->second && v >= 0 && consumers[v] == 1 && !is_output[v];) {
      const int p = g.values[v].producer;
      if (p < 0) break;
      drop[p] = true;
      v = g.nodes[p].inputs[0];
    }
  }
  if (!out) return graph;
  drop_nodes(*out, drop);
  return out;
}

}  // namespace porta::detail
