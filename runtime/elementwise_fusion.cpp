// Elementwise chains (runtime/graph_fusion.hpp, fuse_elementwise_chains): groups of elementwise
// nodes whose intermediate values nothing outside the group reads become one ElementwiseChain
// (ai.porta; ops/elementwise_chain.hpp), one pass and one dispatch instead of one per node.
// What is left between a model's larger ops after the other rewrites: scalings before a residual
// Add (ConvNeXt's layer scale), activations no producer takes (Mish, a Swish of a value nothing
// fused), the tail of a norm written out that the norm rewrites do not take.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/common.hpp"
#include "ops/elementwise_chain.hpp"
#include "porta/dispatch.hpp"
#include "runtime/eager.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

namespace chain = opdef::chain;

const OpSchema* chain_schema() { return find_op("ai.porta", "ElementwiseChain"); }

// The op a node may be a step of (by its op alone; operands are checked with shapes), else null.
const chain::OpInfo* step_op(const Node& n) {
  if (!n.op->domain.empty() || n.outputs.size() != 1 || n.outputs[0] < 0) return nullptr;
  const chain::OpInfo* op = chain::find_op_info(n.op->name);
  if (!op) return nullptr;
  const size_t given = n.inputs.size();
  if (op->arity == 2 ? given != 2 : n.op->name == "Clip" ? given < 1 || given > 3 : given != 1) return nullptr;
  return op;
}

// A scalar constant: an initializer, a Constant node, or a value the plan folds (annotated).
std::optional<double> scalar_of(const Graph& g, int v) {
  if (std::optional<double> c = constant_scalar(g, v)) return c;
  const Tensor& f = g.values[v].folded;
  if (f.defined() && f.numel() == 1 && dtype_in(kFloats, f.dtype())) return f.to_doubles().at(0);
  return std::nullopt;
}

bool is_constant(const Graph& g, int v) {
  const Value& val = g.values[v];
  return val.constant.defined() || val.plan_constant || val.folded.defined() || constant_node(g, v) != nullptr;
}

// One node as a step: its operands (value ids, or immediates), and its attribute floats.
struct NodeStep {
  const chain::OpInfo* op = nullptr;
  int a = -1, b = -1;                      // tensor operands (values); -1 where immediate or none
  std::optional<double> ia, ib;            // immediates
  double alpha = 0.0, beta = 0.0;
};

// The node `n` as a step over annotated shapes, or nullopt where it cannot be one: its output
// is a float value the plan does not fold, an operand that is a scalar constant becomes an
// immediate where it does not widen the output's rank, every other operand has the output's
// dtype.
std::optional<NodeStep> as_step(const Graph& g, const Node& n) {
  NodeStep s;
  s.op = step_op(n);
  if (!s.op) return std::nullopt;
  const Value& y = g.values[n.outputs[0]];
  if (!y.shape_known || (y.dtype != DType::f32 && y.dtype != DType::f16) || is_constant(g, n.outputs[0]))
    return std::nullopt;
  const std::string& name = n.op->name;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const int v = n.inputs[k];
    if (v < 0 ? !(name == "Clip" && k > 0) : !g.values[v].shape_known) return std::nullopt;  // Clip's bounds may be absent
  }
  if (name == "Clip") {
    for (size_t k = 1; k < 3; ++k) {
      const double absent = k == 1 ? -INFINITY : INFINITY;
      if (k >= n.inputs.size() || n.inputs[k] < 0) {
        (k == 1 ? s.alpha : s.beta) = absent;
        continue;
      }
      std::optional<double> bound = scalar_of(g, n.inputs[k]);
      if (!bound || std::isnan(*bound)) return std::nullopt;  // a NaN bound: Clip ignores it
      (k == 1 ? s.alpha : s.beta) = *bound;
    }
  } else if (name == "LeakyRelu") {
    s.alpha = n.attrs.get_float("alpha", 0.01);
  } else if (name == "Elu" || name == "Celu") {
    s.alpha = n.attrs.get_float("alpha", 1.0);
  } else if (name == "HardSigmoid") {
    s.alpha = n.attrs.get_float("alpha", 0.2);
    s.beta = n.attrs.get_float("beta", 0.5);
  } else if (name == "Selu") {
    s.alpha = n.attrs.get_float("alpha", 1.67326319217681884765625);
    s.beta = n.attrs.get_float("gamma", 1.05070102214813232421875);
  }
  auto operand = [&](int v, int other, int& tensor, std::optional<double>& imm) {
    const Value& val = g.values[v];
    if (std::optional<double> c = scalar_of(g, v);
        c && (other < 0 || val.shape.size() <= g.values[other].shape.size()) && val.shape.size() <= y.shape.size()) {
      imm = c;
      return true;
    }
    if (val.dtype != y.dtype) return false;  // Pow's exponent of another dtype
    tensor = v;
    return true;
  };
  const int x = n.inputs[0];
  if (s.op->arity == 1) {
    if (g.values[x].dtype != y.dtype || is_constant(g, x)) return std::nullopt;
    s.a = x;
    return s;
  }
  const int b = n.inputs[1];
  if (!operand(x, b, s.a, s.ia) || !operand(b, x, s.b, s.ib) || (s.ia && s.ib)) return std::nullopt;
  return s;
}

}  // namespace

bool elementwise_chain_candidates(const Graph& graph, Device device) {
  const OpSchema* schema = chain_schema();
  if (!schema || !fusion_enabled() || resolve(*schema, device, DType::f32).path != Path::native) return false;
  const ValueReaders r(graph);
  const std::vector<bool>& is_output = r.is_output;
  const std::vector<std::vector<int>>& readers = r.readers;
  for (const Node& n : graph.nodes) {
    if (!step_op(n) || is_output[n.outputs[0]] || readers[n.outputs[0]].empty()) continue;
    const auto& r = readers[n.outputs[0]];
    if (std::all_of(r.begin(), r.end(), [&](int k) { return step_op(graph.nodes[k]) != nullptr; })) return true;
  }
  return false;
}

std::shared_ptr<const Graph> fuse_elementwise_chains(const std::shared_ptr<const Graph>& graph, Device device,
                                                     bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* schema = chain_schema();
  if (!schema) return graph;
  const Graph& g = *graph;
  const size_t nodes = g.nodes.size();
  std::vector<std::optional<NodeStep>> steps(nodes);
  for (size_t i = 0; i < nodes; ++i) steps[i] = as_step(g, g.nodes[i]);
  // Nodes the host prologue computes (a mask as (1 - m) * -10000) stay nodes: the cpu has no
  // chain kernel, so a chain of them would be the device's work.
  if (device.type != DeviceType::cpu) {
    const std::vector<bool> host = host_prologue_values(g);
    for (size_t i = 0; i < nodes; ++i)
      if (steps[i] && host[g.nodes[i].outputs[0]]) steps[i].reset();
  }
  const ValueReaders r(g);
  const std::vector<bool>& is_output = r.is_output;
  const std::vector<std::vector<int>>& readers = r.readers;
  // The device's kernels say how large a chain one call may be (KernelDef::limits).
  auto limit = [&](DType dt, const char* name) { return kernel_limit(*schema, dt, device, name); };

  // Groups, from the last node back: a step joins the group of the steps that read its output
  // when they are all in one group and it has room (steps, and tensor inputs: the step's
  // operands replace its output among them), so every group has one node whose output leaves
  // it, its last, and a group too large for one call ends where it fills. A value that steps of
  // two groups read stays between them.
  const int64_t max_steps = limit(DType::f32, "steps"), max_inputs = limit(DType::f32, "inputs");
  std::vector<int> group(nodes, -1), size(nodes, 0);  // group: its last node's index
  std::vector<std::vector<int>> group_inputs(nodes);  // by group: values it reads from outside
  auto operands_of = [&](size_t i) {
    std::vector<int> v;
    for (int x : {steps[i]->a, steps[i]->b})
      if (x >= 0 && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    return v;
  };
  for (size_t i = nodes; i-- > 0;) {
    if (!steps[i]) continue;
    group[i] = static_cast<int>(i);
    const int y = g.nodes[i].outputs[0];
    const auto& r = readers[y];
    if (!is_output[y] && !r.empty()) {
      int joined = group[r[0]];
      for (int k : r)
        if (!steps[k] || group[k] != joined) joined = -1;
      if (joined >= 0 && size[joined] < max_steps) {
        std::vector<int> in = group_inputs[joined];
        in.erase(std::remove(in.begin(), in.end(), y), in.end());
        for (int x : operands_of(i))
          if (std::find(in.begin(), in.end(), x) == in.end()) in.push_back(x);
        if (static_cast<int64_t>(in.size()) <= max_inputs) {
          group[i] = joined;
          group_inputs[joined] = std::move(in);
        }
      }
    }
    if (group[i] == static_cast<int>(i)) group_inputs[i] = operands_of(i);
    ++size[group[i]];
  }
  std::vector<std::vector<int>> groups(nodes);
  for (size_t i = 0; i < nodes; ++i)
    if (group[i] >= 0) groups[group[i]].push_back(static_cast<int>(i));

  struct Fused {
    std::vector<int> members;  // in node order; the last becomes the chain
    std::vector<int> inputs;
    chain::Program program;
  };
  std::vector<Fused> fused;
  for (std::vector<int>& members : groups) {
    if (members.size() < 2) continue;
    const int last = members.back();
    auto in_group = [&](int k) { return k >= 0 && group[k] == last; };
    // One value leaves the group, the last node's (so built; checked, as the rewrite relies on it).
    bool one_exit = true;
    for (int m : members) {
      const int y = g.nodes[m].outputs[0];
      const bool leaves = is_output[y] || std::any_of(readers[y].begin(), readers[y].end(), [&](int k) { return !in_group(k); });
      if (leaves != (m == last)) one_exit = false;
    }
    if (!one_exit) continue;
    const Value& out = g.values[g.nodes[last].outputs[0]];
    if (resolve(*schema, device, out.dtype).path != Path::native) continue;
    Fused f;
    f.members = members;
    // The group's inputs, in the order their readers come; registers: inputs, then steps.
    std::vector<int> reg(g.values.size(), -1);
    for (int m : members)
      for (int v : {steps[m]->a, steps[m]->b})
        if (v >= 0 && reg[v] < 0 && (g.values[v].producer < 0 || !in_group(g.values[v].producer))) {
          reg[v] = static_cast<int>(f.inputs.size());
          f.inputs.push_back(v);
        }
    if (f.inputs.empty() || static_cast<int64_t>(f.inputs.size()) > limit(out.dtype, "inputs") ||
        static_cast<int64_t>(members.size()) > limit(out.dtype, "steps"))
      continue;
    // They broadcast to the last node's output (immediates never widen it) in its dtype.
    Shape shape = g.values[f.inputs[0]].shape;
    bool shapes_ok = true;
    for (int v : f.inputs) {
      if (g.values[v].dtype != out.dtype) shapes_ok = false;
      try {
        shape = opdef::broadcast_shapes(shape, g.values[v].shape, "ElementwiseChain");
      } catch (const Error&) {
        shapes_ok = false;
      }
    }
    if (!shapes_ok || shape != out.shape) continue;
    chain::Program& p = f.program;
    p.inputs = static_cast<int>(f.inputs.size());
    for (size_t s = 0; s < members.size(); ++s) {
      const NodeStep& ns = *steps[members[s]];
      chain::Step st;
      st.op = ns.op;
      auto code = [&](int v, const std::optional<double>& imm) -> int64_t {
        if (imm) {
          p.constants.push_back(*imm);
          return chain::immediate_operand(p.constants.size() - 1);
        }
        return v < 0 ? chain::kNone : reg[v];
      };
      st.a = code(ns.a, ns.ia);
      st.b = ns.op->arity == 2 ? code(ns.b, ns.ib) : chain::kNone;
      st.alpha = ns.alpha;
      st.beta = ns.beta;
      p.steps.push_back(st);
      reg[g.nodes[members[s]].outputs[0]] = p.inputs + static_cast<int>(s);
    }
    if (static_cast<int64_t>(p.floats()) > limit(out.dtype, "floats")) continue;
    fused.push_back(std::move(f));
  }
  if (fused.empty()) return graph;

  std::vector<PatternRewrite> rewrites;
  for (const Fused& f : fused) rewrites.push_back({f.members, schema, f.inputs, chain::to_attributes(f.program), ""});
  return rewrite_patterns(g, rewrites);
}

}  // namespace porta::detail
