// porta check — runs a model on each device and on the float64 reference (porta::reference_op,
// node by node, in f64), compares every value a node computes, prints per node the max
// absolute and relative error per device, names the first node over the tolerance, and
// returns 1 when any node is over it (0 otherwise).
//
// Errors: max_abs = max |device - reference|; rel = ||device - reference||_2 / ||reference||_2
// over the node's outputs (NaN where exactly one side is NaN counts as infinite error).
#include <cmath>
#include <iomanip>
#include <iostream>

#include "runtime/graph.hpp"
#include "tools/cli.hpp"

namespace porta::cli {
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

int cmd_check(const Args& args) {
  if (args.positional.size() != 1)
    throw InvalidArgument(str("[check] expected one model path (porta check MODEL.onnx --devices cpu,...), got ",
                              args.positional.size()));
  const std::string path = args.positional[0];
  Model model = Model::load(path);
  std::map<std::string, Tensor> inputs = model_inputs(model, path, args.all("--input"));
  std::vector<std::string> names = args.list("--devices");
  if (names.empty()) names = {"cpu"};
  std::vector<Device> devices = parse_devices(names);
  double tolerance = 0;
  try {
    tolerance = std::stod(args.get("--tolerance", "1e-4"));
  } catch (const std::exception&) {
    throw InvalidArgument(str("[check] --tolerance should be a number, got '", args.get("--tolerance"), "'"));
  }
  const Graph& g = model.graph();

  std::map<int, RefValue> ref = run_reference(g, inputs);
  std::vector<std::map<std::string, Tensor>> got;
  for (Device d : devices) {
    SessionOptions o;
    o.device = d;
    o.strict = args.has("--strict");
    o.keep_values = true;
    Session session(model, o);
    session.run(inputs);
    got.push_back(session.values());
  }

  std::cout << "model: " << path << "  (errors against the float64 reference; relative = L2 norm ratio, "
            << "tolerance " << tolerance << ")\n";
  // Every column starts with a space, so long device names or node names never run together.
  std::cout << std::left << std::setw(34) << "node" << " " << std::setw(26) << "op";
  for (Device d : devices) std::cout << std::right << " " << std::setw(std::max<int>(11, d.str().size() + 4)) << (d.str() + " abs") << " " << std::setw(11) << "rel";
  std::cout << "\n";
  std::string first_bad;
  int bad_nodes = 0;
  for (const Node& n : g.nodes) {
    std::cout << std::left << std::setw(34) << (n.name.empty() ? "(unnamed)" : n.name) << " " << std::setw(26)
              << n.op->qualified_name();
    bool over = false;
    for (size_t di = 0; di < devices.size(); ++di) {
      double max_abs = 0, d2 = 0, r2 = 0;
      bool missing = false;
      for (int v : n.outputs) {
        if (v < 0 || !ref.count(v)) continue;
        auto it = got[di].find(g.values[v].name);
        if (it == got[di].end()) {
          missing = true;
          continue;
        }
        accumulate(it->second.to(Device::cpu()), ref[v].data, max_abs, d2, r2);
      }
      double rel = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
      if (missing && max_abs == 0) {
        std::cout << std::right << " " << std::setw(std::max<int>(11, devices[di].str().size() + 4)) << "-" << " "
                  << std::setw(11) << "-";
        continue;
      }
      over |= !(rel <= tolerance);
      std::cout << std::right << std::scientific << std::setprecision(2) << " "
                << std::setw(std::max<int>(11, devices[di].str().size() + 4)) << max_abs << " " << std::setw(11) << rel
                << std::defaultfloat;
    }
    if (over) {
      std::cout << "  OVER";
      ++bad_nodes;
      if (first_bad.empty()) first_bad = str("'", n.name, "' (", n.op->name, ")");
    }
    std::cout << "\n";
  }
  if (bad_nodes == 0) {
    std::cout << "ok: every node within " << tolerance << " on every device\n";
    return 0;
  }
  std::cout << "first node over the tolerance: " << first_bad << "; " << bad_nodes << " node(s) over " << tolerance
            << "\n";
  return 1;
}

}  // namespace porta::cli
