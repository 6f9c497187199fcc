// porta::check_model: each node's outputs on devices against a float64 run of the graph (the
// model's float values stay f64 between nodes, so the reference has no rounding of its own).
#include "porta/check.hpp"

#include <cmath>

#include "porta/dispatch.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/graph.hpp"

namespace porta {
namespace {

// A reference value: f64 data plus the dtype the model gives it.
struct RefValue {
  Tensor data;
  DType dtype = DType::f64;
};

// What a reference op receives: float values stay f64 (no rounding to the model's float
// type between nodes); others take their own dtype, which inference may depend on.
Tensor reference_input(const RefValue& v) { return is_floating(v.dtype) ? v.data : v.data.cast(v.dtype); }

std::map<int, RefValue> run_reference(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  std::map<int, RefValue> values;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].constant.defined())
      values[static_cast<int>(i)] = {g.values[i].constant.cast(DType::f64), g.values[i].constant.dtype()};
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const std::string& name = g.input_descs[k].name;
    auto it = inputs.find(name);
    if (it == inputs.end()) throw InvalidArgument(str("[check] input '", name, "' was not given"));
    values[g.inputs[k]] = {it->second.to(Device::cpu()).cast(DType::f64), it->second.dtype()};
  }
  for (const Node& n : g.nodes) {
    std::vector<Tensor> args, typed;
    for (int v : n.inputs) {
      if (v < 0) {
        args.emplace_back();
        typed.emplace_back();
        continue;
      }
      auto it = values.find(v);
      if (it == values.end())
        throw InvalidModel(str("[check] node '", n.name, "' reads '", g.values[v].name, "' before it is computed"));
      args.push_back(reference_input(it->second));
      typed.push_back(it->second.data.cast(it->second.dtype));
    }
    std::vector<DType> dtypes;
    std::vector<Tensor> outs;
    try {
      outs = reference_op(n.op->qualified_name(), args, n.attrs, static_cast<int>(n.outputs.size()), &dtypes);
    } catch (const Error&) {
      // Ops that insist on a narrower float type than f64: run on the model's own dtypes.
      outs = reference_op(n.op->qualified_name(), typed, n.attrs, static_cast<int>(n.outputs.size()), &dtypes);
    }
    for (size_t i = 0; i < n.outputs.size() && i < outs.size(); ++i) {
      if (n.outputs[i] < 0 || !outs[i].defined()) continue;
      // Float results keep the model's float type (an f64 run of an f32 model reports f32).
      DType model_dtype = g.values[n.outputs[i]].shape_known ? g.values[n.outputs[i]].dtype : dtypes[i];
      if (is_floating(dtypes[i]) && is_floating(model_dtype)) dtypes[i] = model_dtype;
      values[n.outputs[i]] = {outs[i], dtypes[i]};
    }
  }
  return values;
}

void accumulate(const Tensor& got, const Tensor& ref, double& max_abs, double& d2, double& r2) {
  if (got.shape() != ref.shape()) {
    max_abs = d2 = INFINITY;
    return;
  }
  std::vector<double> a = got.to_doubles(), b = ref.to_doubles();
  for (size_t i = 0; i < a.size(); ++i) {
    bool an = std::isnan(a[i]), bn = std::isnan(b[i]);
    if (an || bn) {
      if (an != bn) max_abs = d2 = INFINITY;
      continue;
    }
    double d = a[i] == b[i] ? 0.0 : std::abs(a[i] - b[i]);
    max_abs = std::max(max_abs, d);
    d2 += d * d;
    if (std::isfinite(b[i])) r2 += b[i] * b[i];
  }
}

}  // namespace

std::vector<NodeError> check_model(const Model& model, const std::map<std::string, Tensor>& inputs,
                                   const CheckOptions& options) {
  const Graph& g = model.graph();
  std::map<int, RefValue> ref = run_reference(g, inputs);
  std::vector<std::map<std::string, Tensor>> got;
  std::vector<std::map<std::string, DType>> computed_in;  // per device: node name -> precision
  for (Device d : options.devices) {
    SessionOptions o;
    o.device = d;
    o.strict = options.strict;
    o.keep_values = true;
    o.precision = options.precision;
    Session session(model, o);
    session.run(inputs);
    got.push_back(session.values());
    std::map<std::string, DType>& formats = computed_in.emplace_back();
    for (const NodePlan& p : session.plan(inputs)) formats[p.node] = p.precision;
  }
  // The error of each value as it reached a node on each device: a node's jump is measured
  // against the worst error among the values it read.
  std::vector<std::map<int, double>> value_error(options.devices.size());
  // Values of nodes a device did not compute on their own (fused into a later node): the ops
  // and the format they were computed in, handed on to the node whose value is kept.
  struct Pending {
    std::string ops;
    DType precision = DType::f32;
  };
  std::vector<std::map<int, Pending>> pending(options.devices.size());
  std::vector<NodeError> table;
  for (const Node& n : g.nodes) {
    for (size_t di = 0; di < options.devices.size(); ++di) {
      NodeError e;
      e.node = n.name;
      e.op = n.op->qualified_name();
      e.device = options.devices[di];
      double max_abs = 0, d2 = 0, r2 = 0;
      bool missing = false;
      if (auto f = computed_in[di].find(n.name); f != computed_in[di].end()) e.precision = f->second;
      Pending inherited;
      for (int v : n.inputs)
        if (auto it = pending[di].find(v); v >= 0 && it != pending[di].end()) {
          inherited.ops += str(inherited.ops.empty() ? "" : ", ", it->second.ops);
          if (it->second.precision != DType::f32) inherited.precision = it->second.precision;
        }
      for (int v : n.outputs) {
        if (v < 0 || !ref.count(v)) continue;
        auto it = got[di].find(g.values[v].name);
        if (it == got[di].end()) {
          missing = true;
          continue;
        }
        accumulate(it->second.to(Device::cpu()), ref[v].data, max_abs, d2, r2);
      }
      if (missing && max_abs == 0) {
        e.computed = false;
        Pending mine{inherited.ops.empty() ? e.op : str(inherited.ops, ", ", e.op),
                     e.precision != DType::f32 ? e.precision : inherited.precision};
        for (int v : n.outputs)
          if (v >= 0) pending[di][v] = mine;
      } else {
        e.fused = inherited.ops;
        if (e.precision == DType::f32 && !computed_in[di].count(n.name)) e.precision = inherited.precision;
        e.max_abs = max_abs;
        e.rel = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
        e.over = !(e.rel <= options.tolerance);
        double given = 0;
        for (int v : n.inputs)
          if (auto it = value_error[di].find(v); v >= 0 && it != value_error[di].end()) given = std::max(given, it->second);
        e.jump = e.over && !(e.rel <= options.jump * given);
      }
      // A node whose outputs were not kept (fused) passes on what it was given.
      double passed = e.rel;
      if (!e.computed)
        for (int v : n.inputs)
          if (auto it = value_error[di].find(v); v >= 0 && it != value_error[di].end()) passed = std::max(passed, it->second);
      for (int v : n.outputs)
        if (v >= 0) value_error[di][v] = passed;
      table.push_back(std::move(e));
    }
  }
  return table;
}

}  // namespace porta
