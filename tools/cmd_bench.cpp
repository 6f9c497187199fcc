// porta bench — entry point: reads the flags, picks the mode (support matrix, case list,
// calibration, model, op suite, --compare) and writes the report where it was asked for.
#include <unistd.h>

#include <iomanip>
#include <iostream>

#include "tools/cmd_bench.hpp"

namespace porta::cli {
namespace {

using namespace bench;

double get_seconds(const Args& args, const std::string& flag, double fallback) {
  if (!args.has(flag)) return fallback;
  std::string v = args.get(flag);
  try {
    size_t pos = 0;
    double x = std::stod(v, &pos);
    if (pos != v.size() || !(x >= 0)) throw 1;
    return x;
  } catch (...) {
    throw InvalidArgument(str("[bench] ", flag, " expects seconds (a non-negative number), got '", v, "'"));
  }
}

Side parse_side(const std::string& text) {
  Side s;
  std::string dev = text;
  if (auto slash = text.find('/'); slash != std::string::npos) {
    if (text.substr(slash + 1) != "no-kernel")
      throw InvalidArgument(str("[bench] --compare sides are DEVICE or DEVICE/no-kernel, got '", text, "'"));
    s.no_kernel = true;
    dev = text.substr(0, slash);
  }
  s.device = Device::parse(dev);
  return s;
}

void list_cases(std::ostream& os) {
  for (const OpSchema* op : all_ops()) {
    if (!op->cases) continue;
    for (const OpCase& c : op->cases()) {
      std::string shapes;
      for (auto& in : c.inputs) shapes += str(shapes.empty() ? "" : ", ", in.absent ? "-" : shape_str(in.shape));
      os << std::left << std::setw(23) << op->qualified_name() << " " << std::setw(24) << c.name << std::setw(5) << (c.perf ? "perf" : "")
         << " " << std::setw(28) << dtype_set_names(c.dtypes) << shapes << "\n";
    }
  }
}

// Every device must be usable: a benchmark of a device that is not there is a mistake to report.
void check_available(Device d) {
  Backend& b = backend_for(d);
  if (d.index >= b.device_count() || !b.availability(d.index).available)
    throw BackendUnavailable(str("[bench] ", d.str(), " is not available: ",
                                 d.index < b.device_count() ? b.availability(d.index).detail : "no such device"));
}

}  // namespace

int cmd_bench(const Args& args) {
  if (args.has("--support")) {
    print_support(std::cout, args.has("--markdown"));
    return 0;
  }
  if (args.has("--list")) {
    list_cases(std::cout);
    return 0;
  }
  Report rep;
  rep.settings.warmup_runs = args.get_int("--warmup", 1);
  rep.settings.min_runs = std::max(1, args.get_int("--min-runs", rep.settings.min_runs));
  rep.settings.min_time_s = get_seconds(args, "--min-time", rep.settings.min_time_s);
  rep.settings.max_case_s = get_seconds(args, "--max-case-time", rep.settings.max_case_s);
  rep.settings.progress = isatty(STDERR_FILENO) && !args.has("--no-progress");

  bool model_mode = !args.positional.empty();
  if (args.positional.size() > 1)
    throw InvalidArgument(str("[bench] takes at most one model, got ", args.positional.size(), " paths"));

  Selection sel;
  sel.ops = args.list("--op");
  sel.dtypes = args.list("--dtype");
  sel.cases = args.list("--case");
  if (args.has("--compare")) {
    std::vector<std::string> sides = args.list("--compare");
    if (sides.size() != 2)
      throw InvalidArgument(str("[bench] --compare takes two sides (A,B), got ", sides.size()));
    Side a = parse_side(sides[0]), b = parse_side(sides[1]);
    if (a.label() == b.label()) throw InvalidArgument(str("[bench] --compare sides are the same: ", a.label()));
    sel.sides = {a, b};
    rep.compare.push_back({a, b});
  } else {
    std::vector<std::string> names = args.list("--device");
    for (Device d : parse_devices(names.empty() ? std::vector<std::string>{"all"} : names)) sel.sides.push_back({d, false});
  }
  std::vector<Device> devices;
  for (auto& s : sel.sides)
    if (std::find(devices.begin(), devices.end(), s.device) == devices.end()) devices.push_back(s.device);
  for (Device d : devices) check_available(d);

  if (model_mode) {
    std::vector<int64_t> batches;
    for (auto& b : args.list("--batch")) {
      try {
        size_t pos = 0;
        batches.push_back(std::stoll(b, &pos));
        if (pos != b.size()) throw 1;
      } catch (...) {
        throw InvalidArgument(str("[bench] --batch expects sizes like 1,8,32, got '", b, "'"));
      }
    }
    rep.models = run_models(args.positional[0], devices, batches, rep.settings);
    print_models(std::cout, rep);
  } else {
    bool only_calibrate = args.has("--calibrate") && sel.ops.empty() && sel.cases.empty() && sel.dtypes.empty() &&
                          !args.has("--compare");
    std::map<std::string, Ceilings> ceilings;
    for (Device d : devices) {
      Ceilings c = ceilings_for(d, args.has("--calibrate"), std::cerr);
      ceilings[d.str()] = c;
      rep.ceilings.push_back(c);
    }
    if (!only_calibrate) rep.results = run_suite(sel, ceilings, rep.settings);
    print_table(std::cout, rep);
    if (!rep.compare.empty()) print_compare(std::cout, rep);
  }
  if (args.has("--json")) write_json(args.get("--json"), rep);
  if (args.has("--csv")) write_csv(args.get("--csv"), rep);
  if (args.has("--svg")) write_svg(args.get("--svg"), rep);
  return 0;
}

}  // namespace porta::cli
