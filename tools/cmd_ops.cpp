// porta ops — for every node of a model: what runs (native / composite / fallback:cpu /
// folded) on a device, in which precision, and why.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "tools/cli.hpp"

namespace porta::cli {
namespace {

std::map<std::string, Tensor> input_shapes(const Model& model, const std::string& path, const Args& args) {
  return model_inputs(model, path, args.all("--input"));
}

std::string cell(const NodePlan& p) {
  std::string s(path_name(p.path));
  if (p.path == Path::fallback) s += str(" (", p.fallback_bytes, " B/run)");
  return s;
}

}  // namespace

int cmd_ops(const Args& args) {
  std::string path = args.positional.empty() ? default_model() : args.positional[0];
  Model model = Model::load(path);
  std::map<std::string, Tensor> shapes = input_shapes(model, path, args);
  if (args.has("--all-devices")) {
    // Every device of every built backend; an unavailable one gets a column that says so.
    std::vector<Device> devices = all_devices();
    std::vector<std::vector<NodePlan>> plans;
    std::vector<std::string> unavailable(devices.size());
    for (size_t k = 0; k < devices.size(); ++k) {
      try {
        SessionOptions o;
        o.device = devices[k];
        o.strict = args.has("--strict");
        o.precision = parse_precision(args.get("--precision", "f32"));
        Session s(model, o);
        plans.push_back(s.plan(shapes));
      } catch (const BackendUnavailable& e) {
        unavailable[k] = e.what();
        plans.emplace_back();
      }
    }
    size_t rows = 0;
    for (auto& p : plans) rows = std::max(rows, p.size());
    const std::vector<NodePlan>* names = nullptr;
    for (auto& p : plans)
      if (p.size() == rows) names = &p;
    std::cout << std::left << std::setw(36) << "node" << std::setw(28) << "op";
    for (Device d : devices) std::cout << std::setw(26) << d.str();
    std::cout << "\n";
    for (size_t i = 0; names && i < rows; ++i) {
      std::cout << std::setw(36) << (*names)[i].node << std::setw(28) << (*names)[i].op;
      for (size_t k = 0; k < devices.size(); ++k)
        std::cout << std::setw(26) << (plans[k].empty() ? std::string("unavailable") : cell(plans[k][i]));
      std::cout << "\n";
    }
    for (size_t k = 0; k < devices.size(); ++k)
      if (!unavailable[k].empty()) std::cout << devices[k].str() << ": " << unavailable[k] << "\n";
    return 0;
  }
  SessionOptions o;
  o.device = parse_devices(args.list("--device")).at(0);
  o.strict = args.has("--strict");
  o.precision = parse_precision(args.get("--precision", "f32"));
  Session session(model, o);
  // node, op, path, why it runs there. With --precision, the dtype it computes in comes after
  // the path, and after the reason (for a precision other than f32) why it computes in that
  // dtype and what was cast for it.
  const bool precision_column = args.has("--precision");
  for (const NodePlan& p : session.plan(shapes)) {
    std::cout << p.node << "  " << p.op << "  " << cell(p) << "  ";
    if (precision_column) std::cout << dtype_name(p.precision) << "  ";
    std::cout << p.reason;
    if (!p.precision_note.empty()) std::cout << "  [precision: " << p.precision_note << "]";
    std::cout << "\n";
  }
  return 0;
}

}  // namespace porta::cli
