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
  options.precision = parse_precision(args.get("--precision", "f32"));
  // A low precision's own rounding: bf16 keeps 8 significant bits, f16 11 (a few units of the
  // last place, grown over a network's depth); f32's default is the kernels' tolerance.
  const char* default_tolerance = options.precision == Precision::bf16   ? "3e-2"
                                  : options.precision == Precision::f16 ? "4e-3"
                                  : options.precision == Precision::automatic ? "3e-2"
                                                                               : "1e-4";
  try {
    options.tolerance = std::stod(args.get("--tolerance", default_tolerance));
  } catch (const std::exception&) {
    throw InvalidArgument(str("[check] --tolerance should be a number, got '", args.get("--tolerance"), "'"));
  }
  const std::vector<Device>& devices = options.devices;
  std::vector<NodeError> table = check_model(model, inputs, options);

  const bool low = options.precision != Precision::f32;
  std::cout << "model: " << path << "  (errors against the float64 reference; relative = L2 norm ratio, "
            << "tolerance " << options.tolerance;
  if (low) std::cout << ", precision " << precision_name(options.precision);
  std::cout << ")\n";
  // Every column starts with a space, so long device names or node names never run together.
  std::cout << std::left << std::setw(34) << "node" << " " << std::setw(26) << "op";
  for (Device d : devices) {
    std::cout << std::right << " " << std::setw(std::max<int>(11, d.str().size() + 4)) << (d.str() + " abs") << " "
              << std::setw(11) << "rel";
    if (low) std::cout << " " << std::setw(5) << "in";
  }
  std::cout << "\n";
  std::string first_bad, first_jump;
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
        if (low) std::cout << " " << std::setw(5) << "-";
        continue;
      }
      over |= e.over;
      std::cout << std::right << std::scientific << std::setprecision(2) << " " << std::setw(width) << e.max_abs
                << " " << std::setw(11) << e.rel << std::defaultfloat;
      if (low) std::cout << " " << std::setw(5) << dtype_name(e.precision);
      if (e.jump && first_jump.empty())
        first_jump = str("'", first.node, "' (", first.op, e.fused.empty() ? "" : str(" with ", e.fused, " fused into it"),
                         ", ", dtype_name(e.precision), ") on ", devices[di].str(), ": relative error ", e.rel);
    }
    if (over) {
      std::cout << "  OVER";
      ++bad_nodes;
      if (first_bad.empty()) first_bad = str("'", first.node, "' (", first.op, ")");
    }
    std::cout << "\n";
  }
  // Where the accuracy is lost: the first node that made its error itself rather than
  // inheriting it (over the tolerance and more than CheckOptions::jump times its inputs').
  if (!first_jump.empty())
    std::cout << "first jump: " << first_jump << ", over the tolerance and over " << options.jump
              << "x the worst error of the values it read\n";
  if (bad_nodes == 0) {
    std::cout << "ok: every node within " << options.tolerance << " on every device\n";
    return 0;
  }
  std::cout << "first node over the tolerance: " << first_bad << "; " << bad_nodes << " node(s) over "
            << options.tolerance << "\n";
  return 1;
}

}  // namespace porta::cli
