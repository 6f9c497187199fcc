// porta check — runs a model on each device and on the float64 reference (porta::check_model),
// prints per node the max absolute and relative error per device, names the first node over
// the tolerance, and returns 1 when any node is over it (0 otherwise).
#include <iomanip>
#include <iostream>

#include "porta/check.hpp"
#include "tools/cli.hpp"

namespace porta::cli {

int cmd_check(const Args& args) {
  if (args.positional.size() != 1)
    throw InvalidArgument(str("[check] expected one model path (porta check MODEL.onnx --devices cpu,...), got ",
                              args.positional.size()));
  const std::string path = args.positional[0];
  Model model = Model::load(path);
  std::map<std::string, Tensor> inputs = model_inputs(model, path, args.all("--input"));
  std::vector<std::string> names = args.list("--devices");
  if (names.empty()) names = {"cpu"};
  CheckOptions options;
  options.devices = parse_devices(names);
  options.strict = args.has("--strict");
  try {
    options.tolerance = std::stod(args.get("--tolerance", "1e-4"));
  } catch (const std::exception&) {
    throw InvalidArgument(str("[check] --tolerance should be a number, got '", args.get("--tolerance"), "'"));
  }
  const std::vector<Device>& devices = options.devices;
  std::vector<NodeError> table = check_model(model, inputs, options);

  std::cout << "model: " << path << "  (errors against the float64 reference; relative = L2 norm ratio, "
            << "tolerance " << options.tolerance << ")\n";
  // Every column starts with a space, so long device names or node names never run together.
  std::cout << std::left << std::setw(34) << "node" << " " << std::setw(26) << "op";
  for (Device d : devices) std::cout << std::right << " " << std::setw(std::max<int>(11, d.str().size() + 4)) << (d.str() + " abs") << " " << std::setw(11) << "rel";
  std::cout << "\n";
  std::string first_bad;
  int bad_nodes = 0;
  // One row per node: check_model gives the devices of a node next to each other.
  for (size_t row = 0; row < table.size(); row += devices.size()) {
    const NodeError& first = table[row];
    std::cout << std::left << std::setw(34) << (first.node.empty() ? "(unnamed)" : first.node) << " "
              << std::setw(26) << first.op;
    bool over = false;
    for (size_t di = 0; di < devices.size(); ++di) {
      const NodeError& e = table[row + di];
      int width = std::max<int>(11, devices[di].str().size() + 4);
      if (!e.computed) {
        std::cout << std::right << " " << std::setw(width) << "-" << " " << std::setw(11) << "-";
        continue;
      }
      over |= e.over;
      std::cout << std::right << std::scientific << std::setprecision(2) << " " << std::setw(width) << e.max_abs
                << " " << std::setw(11) << e.rel << std::defaultfloat;
    }
    if (over) {
      std::cout << "  OVER";
      ++bad_nodes;
      if (first_bad.empty()) first_bad = str("'", first.node, "' (", first.op, ")");
    }
    std::cout << "\n";
  }
  if (bad_nodes == 0) {
    std::cout << "ok: every node within " << options.tolerance << " on every device\n";
    return 0;
  }
  std::cout << "first node over the tolerance: " << first_bad << "; " << bad_nodes << " node(s) over "
            << options.tolerance << "\n";
  return 1;
}

}  // namespace porta::cli
