// porta runtime — Conv + BatchNormalization folding and activation fusion (contracts in
// graph_fusion.hpp). Exported CNNs in eval mode keep BatchNormalization after every Conv when
// exported with training=PRESERVE, and nearly every Conv is followed by an activation (Relu;
// Clip(0, 6) = ReLU6 in MobileNetV2, HardSwish in MobileNetV3, x * Sigmoid(x) = SiLU in
// EfficientNet); each rewrite removes one full pass over the activation per block.
#include "runtime/graph_fusion.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/registry.hpp"
#include "runtime/session_plan.hpp"

namespace porta::detail {

bool fusion_enabled() {
  const char* v = std::getenv("PORTA_FUSE");
  return !(v && std::string(v) == "0");
}

std::string fresh_name(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.find(name) >= 0; ++k) name = str(base, "_", k);
  return name;
}

int constant_shape(Graph& g, const std::string& name, const Shape& shape) {
  const int v = g.add_value(fresh_name(g, name));
  std::vector<double> dims(shape.begin(), shape.end());
  g.values[v].constant = Tensor::from_values(dims, {static_cast<int64_t>(shape.size())}, DType::i64);
  g.values[v].dtype = DType::i64;
  g.values[v].shape = {static_cast<int64_t>(shape.size())};
  g.values[v].shape_known = true;
  return v;
}

int new_value(Graph& g, const std::string& name, DType dtype, Shape shape) {
  const int v = g.add_value(fresh_name(g, name));
  g.values[v].dtype = dtype;
  g.values[v].shape = std::move(shape);
  g.values[v].shape_known = true;
  return v;
}

Node new_node(const char* domain, const char* op, std::string name, std::vector<int> inputs, std::vector<int> outputs,
              const Attributes& attrs) {
  Node n;
  n.op = find_op(domain, op);
  if (!n.op) throw Unsupported(str("[graph rewrite] no ", op, " op registered"));
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attrs = complete_attributes(*n.op, attrs, n.name);
  return n;
}

bool uniform_constant(const Tensor& t) {
  if (t.numel() <= 1) return true;
  if (t.numel() > kHostPrologueElements || !dtype_in(kFloats, t.dtype())) return false;
  const std::vector<double> v = t.to_doubles();
  for (double x : v)
    if (!(x == v[0]) && !(std::isnan(x) && std::isnan(v[0]))) return false;
  return true;
}

PrologueRule prologue_rule(const std::vector<PrologueInput>& inputs, const std::vector<int64_t>& output_numels) {
  PrologueRule r;
  bool any_host = false;
  r.masks = true;
  for (const PrologueInput& in : inputs) {
    if (in.constant) {
      if (in.floating) r.masks = r.masks && uniform_constant(*in.constant);
      continue;
    }
    if (!in.host || (in.floating && !in.mask)) return {};
    any_host = true;
    if (in.floating) r.masks = r.masks && in.mask;
  }
  for (int64_t n : output_numels)
    if (n < 0 || n > kHostPrologueElements) return {};
  r.place = any_host;
  return r;
}

std::vector<bool> host_prologue_values(const Graph& g) {
  std::vector<bool> host(g.values.size(), false), mask(g.values.size(), false);
  for (int v : g.inputs)
    host[v] = g.values[v].dtype == DType::i64 || g.values[v].dtype == DType::i32 || g.values[v].dtype == DType::boolean;
  for (const Node& n : g.nodes) {
    std::vector<PrologueInput> ins;
    for (int u : n.inputs)
      if (u >= 0)
        ins.push_back({constant_tensor(g, u), dtype_in(kFloats, dtype_of(g, u)), bool(host[u]), bool(mask[u])});
    std::vector<int64_t> numels;
    for (int o : n.outputs) {
      if (o < 0) continue;
      const Value& v = g.values[o];
      const bool known = v.shape_known && std::all_of(v.shape.begin(), v.shape.end(), [](int64_t d) { return d >= 0; });
      numels.push_back(known ? shape_numel(v.shape) : -1);
    }
    const PrologueRule r = prologue_rule(ins, numels);
    if (!r.place) continue;
    for (int o : n.outputs)
      if (o >= 0) {
        host[o] = true;
        mask[o] = r.masks && dtype_in(kFloats, g.values[o].dtype);
      }
  }
  return host;
}

void splice_nodes(Graph& g, std::vector<std::vector<Node>>& inserted, const std::vector<bool>& drop) {
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (i < inserted.size())
      for (Node& n : inserted[i]) nodes.push_back(std::move(n));
    if (!drop[i]) nodes.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(nodes);
  drop_nodes(g, std::vector<bool>(g.nodes.size(), false));  // renumbers the producers
}

const Attributes& exact_reshape() {
  static const Attributes attrs{{"allowzero", int64_t{1}}};
  return attrs;
}

std::vector<int> consumer_counts(const Graph& g) {
  std::vector<int> n(g.values.size(), 0);
  for (const Node& node : g.nodes)
    for (int v : node.inputs)
      if (v >= 0) ++n[v];
  return n;
}

std::vector<bool> graph_output_flags(const Graph& g) {
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[v] = true;
  return is_output;
}

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

void drop_unread_constants(const Graph& g, const std::vector<int>& candidates, std::vector<bool>& drop) {
  std::vector<int> left = consumer_counts(g);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (drop[i])
      for (int v : g.nodes[i].inputs)
        if (v >= 0) --left[v];
  std::vector<bool> is_output = graph_output_flags(g);
  for (int v : candidates) {
    int p = v >= 0 ? g.values[v].producer : -1;
    if (p < 0 || drop[p] || left[v] != 0 || is_output[v]) continue;
    const Node& n = g.nodes[p];
    if (n.op->name == "Constant" && n.op->domain.empty() && n.outputs.size() == 1) drop[p] = true;
  }
}

namespace {

bool f32_constant(const Graph& g, int v) {
  return v >= 0 && g.values[v].constant.defined() && g.values[v].constant.dtype() == DType::f32;
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

// Whether every kernel that may run `op` for `dtype` on `device` applies `activation` itself.
bool kernels_fuse(const OpSchema& op, DType dtype, Device device, const std::string& activation) {
  return every_kernel_declares(op, dtype, device, [&](const KernelDef& k) { return kernel_fuses(k, activation); });
}

// Whether `op` declares the activation attributes (porta_activation and its two floats).
bool has_activation_attrs(const OpSchema& op) {
  int found = 0;
  for (const AttrDef& a : op.attrs)
    found += a.name == "porta_activation" || a.name == "porta_activation_alpha" || a.name == "porta_activation_beta";
  return found == 3;
}

}  // namespace

const Node* constant_node(const Graph& g, int v) {
  if (v < 0 || g.values[v].constant.defined() || g.values[v].producer < 0) return nullptr;
  const Node& n = g.nodes[g.values[v].producer];
  return n.op->name == "Constant" && n.op->domain.empty() ? &n : nullptr;
}

const Tensor* constant_tensor(const Graph& g, int v) {
  if (v < 0) return nullptr;
  if (g.values[v].constant.defined()) return &g.values[v].constant;
  const Node* n = constant_node(g, v);
  if (n && n->attrs.has("value") && std::holds_alternative<Tensor>(*n->attrs.find("value")))
    return &n->attrs.get_tensor("value");
  return nullptr;
}

bool is_onnx_op(const Node& n, const char* name, int inputs) {
  return n.op->domain.empty() && n.op->name == name && n.outputs.size() == 1 && n.outputs[0] >= 0 &&
         (inputs < 0 || n.inputs.size() == static_cast<size_t>(inputs));
}

DType dtype_of(const Graph& g, int v) {
  const Value& value = g.values[v];
  return value.constant.defined() ? value.constant.dtype() : value.dtype;
}

const Shape* known_shape(const Graph& g, int v) {
  const Value& value = g.values[v];
  if (value.constant.defined()) return &value.constant.shape();
  return value.shape_known ? &value.shape : nullptr;
}

const Shape* pointwise_conv_weight(const Graph& g, const Node& n, int x, DType dt) {
  if (!is_onnx_op(n, "Conv") || n.inputs.size() < 2 || n.inputs.size() > 3 || n.inputs[0] != x) return nullptr;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] == x || (n.inputs[i] >= 0 && dtype_of(g, n.inputs[i]) != dt)) return nullptr;
  if (dtype_of(g, x) != dt) return nullptr;
  const std::string pad = n.attrs.get_string("auto_pad", "NOTSET");
  if (n.attrs.get_int("group", 1) != 1 || (pad != "NOTSET" && pad != "VALID")) return nullptr;
  for (int64_t p : n.attrs.get_ints("pads", {}))
    if (p != 0) return nullptr;
  const Shape* w = known_shape(g, n.inputs[1]);
  if (!w || w->size() < 3 || (*w)[0] < 0 || (*w)[1] < 0) return nullptr;
  for (size_t i = 2; i < w->size(); ++i)
    if ((*w)[i] != 1) return nullptr;
  return w;
}

void copy_fused_activation(const Attributes& from, Attributes& to, const std::string& key) {
  to.set(key, from.get_string("porta_activation", ""));
  to.set(key + "_alpha", from.get_float("porta_activation_alpha", 0.0));
  to.set(key + "_beta", from.get_float("porta_activation_beta", 0.0));
}

bool native_for_shapes(const Graph& g, const OpSchema& op, const std::vector<int>& inputs, const Attributes& attrs,
                       int output, Device device) {
  auto fully = [&](int v) -> const Shape* {
    const Shape* s = known_shape(g, v);
    if (!s) return nullptr;
    for (int64_t d : *s)
      if (d < 0) return nullptr;
    return s;
  };
  const Attributes full = complete_attributes(op, attrs, "");
  KernelContext probe;
  probe.op = &op;
  probe.attrs = &full;
  probe.device = device;
  probe.backend = &backend_for(device);
  for (int v : inputs) {
    if (v < 0) {
      probe.inputs.emplace_back();
      continue;
    }
    const Shape* s = fully(v);
    if (!s) return false;
    probe.inputs.push_back(shape_probe(*s, dtype_of(g, v)));
  }
  const Shape* out = fully(output);
  if (!out || op.dispatch_input < 0 || static_cast<size_t>(op.dispatch_input) >= inputs.size() ||
      inputs[op.dispatch_input] < 0)
    return false;
  probe.outputs.push_back(shape_probe(*out, g.values[output].dtype));
  return resolve_call(probe, dtype_of(g, inputs[op.dispatch_input])).path == Path::native;
}

bool native_match_exists(const Graph& g, const char* domain, const char* op, Device device,
                         const std::function<int(int)>& x_of) {
  const OpSchema* schema = find_op(domain, op);
  if (!schema) return false;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (const int x = x_of(static_cast<int>(i)); x >= 0 && resolve(*schema, device, dtype_of(g, x)).path == Path::native)
      return true;
  return false;
}

ValueReaders::ValueReaders(const Graph& g) : readers(g.values.size()), is_output(graph_output_flags(g)) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int v : g.nodes[i].inputs)
      if (v >= 0) readers[v].push_back(static_cast<int>(i));
}

int ValueReaders::only_reader(int v) const {
  if (v < 0 || is_output[v] || readers[v].size() != 1) return -1;
  return readers[v][0];
}

std::shared_ptr<const Graph> rewrite_patterns(const Graph& g, const std::vector<PatternRewrite>& rewrites) {
  auto out = std::make_shared<Graph>(g);
  std::vector<bool> drop(out->nodes.size(), false);
  std::vector<int> read_by_dropped;
  for (const PatternRewrite& r : rewrites) {
    for (int k : r.nodes) {
      for (int v : out->nodes[k].inputs)
        if (v >= 0) read_by_dropped.push_back(v);
      if (k != r.nodes.back()) drop[k] = true;
    }
    Node& last = out->nodes[r.nodes.back()];
    if (!r.name.empty()) last.name = r.name;
    last.op = r.op;
    last.inputs = r.inputs;
    last.attrs = complete_attributes(*r.op, r.attrs, last.name);
  }
  drop_unread_constants(*out, read_by_dropped, drop);
  drop_nodes(*out, drop);
  return out;
}

int through_identities(const Graph& g, int v) {
  for (int p = v >= 0 ? g.values[v].producer : -1; p >= 0; p = v >= 0 ? g.values[v].producer : -1) {
    const Node& n = g.nodes[p];
    if (n.op->name != "Identity" || !n.op->domain.empty() || n.inputs.size() != 1) break;
    v = n.inputs[0];
  }
  return v;
}

std::optional<double> constant_scalar(const Graph& g, int v) {
  if (const Node* n = constant_node(g, v); n && n->attrs.has("value_float")) return n->attrs.get_float("value_float");
  const Tensor* t = constant_tensor(g, v);
  if (!t || t->numel() != 1 || !dtype_in(kFloats, t->dtype())) return std::nullopt;
  return t->to_doubles().at(0);
}

namespace {

// One activation folding into its producer.
struct ActivationFusion {
  size_t producer = 0;
  std::vector<int> nodes;  // the nodes that disappear (the activation; Sigmoid and Mul for Swish)
  int output = -1;         // the value the producer then writes
  std::string name;        // porta_activation
  double alpha = 0.0, beta = 0.0;
};

// The activation (ops/fused_activation.hpp) that the single-output node `r` reading `y` alone
// computes from y, with its attributes; false when it is none of them (or a Clip whose bounds
// are not constant scalars).
bool single_node_activation(const Graph& g, const Node& r, int y, ActivationFusion& f) {
  if (!r.op->domain.empty() || r.outputs.size() != 1 || r.outputs[0] < 0 || r.inputs.empty() || r.inputs[0] != y)
    return false;
  const std::string& op = r.op->name;
  f.name = op;
  if (op == "Clip") {  // opset 11+: bounds are inputs; an absent one does not clip
    if (r.inputs.size() > 3) return false;
    f.alpha = -std::numeric_limits<double>::infinity();
    f.beta = std::numeric_limits<double>::infinity();
    for (size_t k = 1; k < r.inputs.size(); ++k) {
      if (r.inputs[k] < 0) continue;
      std::optional<double> bound = constant_scalar(g, r.inputs[k]);
      if (!bound || std::isnan(*bound)) return false;  // a NaN bound: Clip ignores it, oneDNN's clip would not
      (k == 1 ? f.alpha : f.beta) = *bound;
    }
    return true;
  }
  if (r.inputs.size() != 1) return false;
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "HardSwish") return true;
  if (op == "LeakyRelu") {
    f.alpha = r.attrs.get_float("alpha", 0.01);
    return true;
  }
  if (op == "Elu") {
    f.alpha = r.attrs.get_float("alpha", 1.0);
    return true;
  }
  if (op == "HardSigmoid") {
    f.alpha = r.attrs.get_float("alpha", 0.2);
    f.beta = r.attrs.get_float("beta", 0.5);
    return true;
  }
  if (op == "Gelu") {  // opset 20's op, or gelu_fusion.cpp's rewrite of PyTorch's export
    const std::string mode = r.attrs.get_string("approximate", "none");
    if (mode != "none" && mode != "tanh") return false;  // the Gelu's own inference rejects it
    f.name = mode == "tanh" ? "GeluTanh" : "Gelu";
    return true;
  }
  return false;
}

// A gate times its input: y read by exactly G(y) and Mul(y, s) / Mul(s, y), s = G's output, read by
// the Mul alone and not a graph output. G = Sigmoid is Swish (SiLU); G = HardSigmoid with alpha
// 1/6 and beta 0.5 is HardSwish (PyTorch's export of hardswish at opsets below 14, which have no
// HardSwish op; alpha as float32 stores 1/6).
bool gated_pattern(const Graph& g, const std::vector<size_t>& readers, int y, const std::vector<int>& consumers,
                   const std::vector<bool>& is_output, ActivationFusion& f) {
  if (readers.size() != 2) return false;
  for (int first = 0; first < 2; ++first) {
    const Node &gate = g.nodes[readers[first]], &mul = g.nodes[readers[1 - first]];
    if (!gate.op->domain.empty() || gate.inputs.size() != 1 || gate.inputs[0] != y || gate.outputs.size() != 1 ||
        gate.outputs[0] < 0)
      continue;
    std::string name;
    if (gate.op->name == "Sigmoid") {
      name = "Swish";
    } else if (gate.op->name == "HardSigmoid" && std::fabs(gate.attrs.get_float("alpha", 0.2) - 1.0 / 6.0) <= 1e-7 &&
               gate.attrs.get_float("beta", 0.5) == 0.5) {
      name = "HardSwish";
    } else {
      continue;
    }
    int s = gate.outputs[0];
    if (consumers[s] != 1 || is_output[s]) continue;
    if (mul.op->name != "Mul" || !mul.op->domain.empty() || mul.inputs.size() != 2 || mul.outputs.size() != 1 ||
        mul.outputs[0] < 0)
      continue;
    if (!((mul.inputs[0] == y && mul.inputs[1] == s) || (mul.inputs[0] == s && mul.inputs[1] == y))) continue;
    f.name = name;
    f.nodes = {static_cast<int>(readers[first]), static_cast<int>(readers[1 - first])};
    f.output = mul.outputs[0];
    return true;
  }
  return false;
}

// The activation following the node at `producer` when it fuses on `device`.
std::optional<ActivationFusion> fusable_activation(const Graph& g, size_t producer, Device device,
                                                   const std::vector<int>& consumers,
                                                   const std::vector<bool>& is_output) {
  const Node& c = g.nodes[producer];
  if (!has_activation_attrs(*c.op) || c.outputs.size() != 1 || c.outputs[0] < 0 || c.inputs.empty()) return std::nullopt;
  if (!c.attrs.get_string("porta_activation", "").empty()) return std::nullopt;
  int y = c.outputs[0];
  if (is_output[y] || consumers[y] < 1 || consumers[y] > 2) return std::nullopt;
  int dispatch = c.op->dispatch_input < 0 ? -1 : c.inputs.at(std::min<size_t>(c.op->dispatch_input, c.inputs.size() - 1));
  DType dtype = dispatch >= 0 ? g.values[dispatch].dtype : g.values[y].dtype;
  std::vector<size_t> readers;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (std::find(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end(), y) != g.nodes[i].inputs.end()) readers.push_back(i);
  ActivationFusion f;
  f.producer = producer;
  if (consumers[y] == 1 && readers.size() == 1) {
    if (!single_node_activation(g, g.nodes[readers[0]], y, f)) return std::nullopt;
    f.nodes = {static_cast<int>(readers[0])};
    f.output = g.nodes[readers[0]].outputs[0];
  } else if (!gated_pattern(g, readers, y, consumers, is_output, f)) {
    return std::nullopt;
  }
  if (!kernels_fuse(*c.op, dtype, device, f.name)) return std::nullopt;
  return f;
}

}  // namespace

namespace {

bool fully_known(const Value& v) {
  if (!v.shape_known) return false;
  for (int64_t d : v.shape)
    if (d < 0) return false;
  return true;
}

// The Add fusing into the Conv, MatMul or Gemm at `conv` as its residual (the op's input 3,
// porta_residual), directly or through one Reshape between them (a Gemm's rows reshaped back
// to [batch, tokens, features]): the Add, the residual value and the Reshape (-1 for none).
struct ResidualMatch {
  size_t add = 0;
  int residual = -1;
  int reshape = -1;
};

// Without `shapes`, only the structure and the kernels are checked.
std::optional<ResidualMatch> residual_add(const Graph& g, size_t conv, Device device, const std::vector<int>& consumers,
                                          const std::vector<bool>& is_output, bool shapes = true) {
  const Node& c = g.nodes[conv];
  if ((c.op->name != "Conv" && c.op->name != "MatMul" && c.op->name != "Gemm") || !c.op->domain.empty() ||
      c.op->inputs.size() < 4 || c.op->inputs[3].rfind("porta_residual", 0) != 0 || c.inputs.size() > 3 ||
      c.inputs.size() < 2 || c.outputs.size() != 1 || c.outputs[0] < 0)
    return std::nullopt;
  if (!c.attrs.get_string("porta_activation", "").empty()) return std::nullopt;
  auto sole_reader = [&](int v, size_t from) {
    if (is_output[v] || consumers[v] != 1 || (shapes && !fully_known(g.values[v]))) return g.nodes.size();
    for (size_t i = from; i < g.nodes.size(); ++i)
      if (std::find(g.nodes[i].inputs.begin(), g.nodes[i].inputs.end(), v) != g.nodes[i].inputs.end()) return i;
    return g.nodes.size();
  };
  ResidualMatch m;
  int y = c.outputs[0];
  m.add = sole_reader(y, conv + 1);
  if (m.add == g.nodes.size()) return std::nullopt;
  if (is_onnx_op(g.nodes[m.add], "Reshape", 2) && g.nodes[m.add].inputs[0] == y) {
    m.reshape = static_cast<int>(m.add);
    y = g.nodes[m.add].outputs[0];
    m.add = sole_reader(y, m.add + 1);
    if (m.add == g.nodes.size()) return std::nullopt;
  }
  const Node& a = g.nodes[m.add];
  if (a.op->name != "Add" || !a.op->domain.empty() || a.inputs.size() != 2 || a.outputs.size() != 1 ||
      a.outputs[0] < 0)
    return std::nullopt;
  m.residual = a.inputs[0] == y ? a.inputs[1] : a.inputs[0];
  if (m.residual < 0 || m.residual == y || (a.inputs[0] != y && a.inputs[1] != y)) return std::nullopt;
  const Value &yv = g.values[y], &rv = g.values[m.residual];
  if (shapes && (!fully_known(rv) || rv.shape != yv.shape || rv.dtype != yv.dtype)) return std::nullopt;
  if (!kernels_fuse(*c.op, shapes ? yv.dtype : DType::f32, device, "porta_residual")) return std::nullopt;
  return m;
}

}  // namespace

bool residual_add_candidates(const Graph& g, Device device) {
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output = graph_output_flags(g);
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (residual_add(g, k, device, consumers, is_output, false)) return true;
  return false;
}

std::shared_ptr<const Graph> fuse_residual_add(const std::shared_ptr<const Graph>& graph, Device device,
                                               bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output = graph_output_flags(g);
  std::shared_ptr<Graph> out;
  std::vector<bool> drop(g.nodes.size(), false), taken(g.nodes.size(), false);
  std::vector<std::vector<Node>> in_place_of(g.nodes.size());  // the nodes an Add becomes
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    auto f = residual_add(g, k, device, consumers, is_output);
    // An Add of two Conv outputs (ResNet's downsampling shortcut) takes the first Conv; the
    // other then computes the residual.
    if (!f || taken[f->add] || drop[f->add] || (f->reshape >= 0 && taken[static_cast<size_t>(f->reshape)])) continue;
    taken[f->add] = true;
    if (!out) out = std::make_shared<Graph>(g);
    Node fused = out->nodes[k];
    fused.inputs.resize(4, -1);
    fused.inputs[3] = f->residual;
    if (f->reshape < 0) {
      fused.outputs[0] = out->nodes[f->add].outputs[0];  // the node's own output is orphaned
      in_place_of[f->add].push_back(std::move(fused));  // in the Add's place: r is computed by then
    } else {
      // The residual reshaped like the product (a view), the product, then its Reshape writing
      // the Add's output.
      const auto reshape = static_cast<size_t>(f->reshape);
      taken[reshape] = true;
      const int y = g.nodes[k].outputs[0];
      const std::string base = g.nodes[f->add].name + "/residual";
      const int r = new_value(*out, base, g.values[f->residual].dtype, g.values[y].shape);
      in_place_of[f->add].push_back(new_node("", "Reshape", base + "/Reshape",
                                             {f->residual, constant_shape(*out, base + "/shape", g.values[y].shape)},
                                             {r}, exact_reshape()));
      fused.inputs[3] = r;
      in_place_of[f->add].push_back(std::move(fused));
      Node back = out->nodes[reshape];
      back.outputs[0] = out->nodes[f->add].outputs[0];
      in_place_of[f->add].push_back(std::move(back));
      drop[reshape] = true;
    }
    drop[k] = true;
    drop[f->add] = true;
  }
  if (!out) return graph;
  splice_nodes(*out, in_place_of, drop);
  return out;
}

std::shared_ptr<const Graph> drop_unread_outputs(const std::shared_ptr<const Graph>& graph, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  for (int v : g.outputs) ++consumers[v];
  auto unread = [&](const Node& n, size_t i) {
    return i < n.op->outputs.size() && !n.op->outputs[i].empty() && n.op->outputs[i].back() == '?' &&
           n.outputs[i] >= 0 && consumers[n.outputs[i]] == 0;
  };
  std::shared_ptr<Graph> out;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    for (size_t i = 0; i < g.nodes[k].outputs.size(); ++i) {
      if (!unread(g.nodes[k], i)) continue;
      if (!out) out = std::make_shared<Graph>(g);
      Value& v = out->values[out->nodes[k].outputs[i]];
      v.producer = -1;  // orphaned, like the values other rewrites leave behind
      out->nodes[k].outputs[i] = -1;
    }
  return out ? out : graph;
}

std::shared_ptr<const Graph> fuse_activations(const std::shared_ptr<const Graph>& graph, Device device,
                                              bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output = graph_output_flags(g);
  std::vector<ActivationFusion> fusions;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (auto f = fusable_activation(g, i, device, consumers, is_output)) fusions.push_back(std::move(*f));
  if (fusions.empty()) return graph;
  auto out = std::make_shared<Graph>(g);
  std::vector<bool> drop(out->nodes.size(), false);
  std::vector<int> read_by_dropped;  // values the disappearing nodes read (Clip's bounds)
  for (const ActivationFusion& f : fusions) {
    Node& producer = out->nodes[f.producer];
    producer.attrs.set("porta_activation", f.name);
    producer.attrs.set("porta_activation_alpha", f.alpha);
    producer.attrs.set("porta_activation_beta", f.beta);
    producer.outputs[0] = f.output;  // the producer's own output value is orphaned
    for (int n : f.nodes) {
      drop[n] = true;
      for (int v : out->nodes[n].inputs)
        if (v >= 0) read_by_dropped.push_back(v);
    }
  }
  // A Constant node that only fed dropped nodes (a Clip's bound) goes too.
  drop_unread_constants(*out, read_by_dropped, drop);
  drop_nodes(*out, drop);
  return out;
}

std::shared_ptr<const Graph> fold_conv_batch_norm(const std::shared_ptr<const Graph>& graph) {
  if (!graph || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output = graph_output_flags(g);
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
