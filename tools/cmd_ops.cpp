// porta ops — for every node of a model: what runs (native / composite / fallback:cpu /
// folded) on a device, and why.
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
    std::vector<Device> devices = parse_devices({"all"});
    std::vector<std::vector<NodePlan>> plans;
    for (Device d : devices) {
      SessionOptions o;
      o.device = d;
      Session s(model, o);
      plans.push_back(s.plan(shapes));
    }
    std::cout << std::left << std::setw(36) << "node" << std::setw(22) << "op";
    for (Device d : devices) std::cout << std::setw(26) << d.str();
    std::cout << "\n";
    for (size_t i = 0; i < plans[0].size(); ++i) {
      std::cout << std::setw(36) << plans[0][i].node << std::setw(22) << plans[0][i].op;
      for (auto& p : plans) std::cout << std::setw(26) << cell(p[i]);
      std::cout << "\n";
    }
    return 0;
  }
  SessionOptions o;
  o.device = parse_devices(args.list("--device")).at(0);
  o.strict = args.has("--strict");
  Session session(model, o);
  for (const NodePlan& p : session.plan(shapes)) {
    std::cout << p.node << "  " << p.op << "  " << cell(p) << "  " << p.reason << "\n";
  }
  return 0;
}

}  // namespace porta::cli
