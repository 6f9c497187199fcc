// porta run — run a model on one or more devices; outputs, timing, profile, error table.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>

#include "runtime/precision.hpp"
#include "tools/cli.hpp"

namespace fs = std::filesystem;

namespace porta::cli {
namespace {

struct ErrorStats {
  double max_abs = 0, rel = 0;
};

ErrorStats compare(const Tensor& got, const Tensor& ref) {
  ErrorStats s;
  if (got.shape() != ref.shape())
    throw ShapeError(str("[run] output has shape ", shape_str(got.shape()), ", reference ",
                         shape_str(ref.shape())));
  std::vector<double> a = got.to_doubles(), b = ref.to_doubles();
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::abs(a[i] - b[i]);
    if (std::isnan(a[i]) != std::isnan(b[i])) d = INFINITY;
    if (!std::isnan(d)) s.max_abs = std::max(s.max_abs, d), d2 += d * d;
    if (!std::isnan(b[i])) r2 += b[i] * b[i];
  }
  s.rel = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
  return s;
}

struct RunTimes {
  double median_us = 0, min_us = 0;
};

// Times of `repeat` runs after a warm-up: their median and their fastest (the fastest is the
// steadier figure for A/B comparisons on a machine whose other tenants slow single runs).
RunTimes run_times(Session& session, const std::map<std::string, Tensor>& inputs, int repeat) {
  session.run(inputs);  // warm-up (compiles, allocates)
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<Tensor> out = session.run(inputs);
    for (auto& t : out) backend_for(t.device()).synchronize(t.device().index);
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  if (times.empty()) return {};
  return {times[times.size() / 2], times.front()};
}

int run_table(const std::string& model_path, const Model& model, const std::map<std::string, Tensor>& inputs,
              const std::vector<Device>& devices, const Args& args) {
  std::map<std::string, Tensor> refs = reference_outputs(model_path);
  std::cout << "model: " << model_path << "\n";
  std::cout << std::left << std::setw(12) << "device" << std::setw(10) << "status" << std::right
            << std::setw(14) << "latency_us" << std::setw(14) << "max_abs_err" << std::setw(14)
            << "rel_err" << "  reference\n";
  int repeat = args.get_int("--repeat", 10);
  bool all_ok = true;
  std::vector<Tensor> cpu_out;
  for (Device d : devices) {
    std::cout << std::left << std::setw(12) << d.str();
    try {
      SessionOptions o;
      o.device = d;
      o.strict = args.has("--strict");
      o.precision = parse_precision(args.get("--precision", "f32"));
      Session session(model, o);
      std::vector<Tensor> out = session.run(inputs);
      double us = run_times(session, inputs, std::max(1, repeat)).median_us;
      ErrorStats worst;
      std::string against = refs.empty() ? "cpu" : "pytorch";
      for (size_t i = 0; i < out.size(); ++i) {
        const std::string& name = model.outputs()[i].name;
        Tensor ref;
        if (!refs.empty()) {
          auto it = refs.find(name);
          if (it == refs.end()) continue;
          ref = it->second;
        } else if (i < cpu_out.size()) {
          ref = cpu_out[i];
        } else {
          continue;
        }
        ErrorStats s = compare(out[i], ref);
        worst.max_abs = std::max(worst.max_abs, s.max_abs);
        worst.rel = std::max(worst.rel, s.rel);
      }
      if (d.type == DeviceType::cpu) cpu_out = out;
      bool ok = worst.rel <= 1e-4;
      all_ok &= ok;
      std::cout << std::setw(10) << (ok ? "ok" : "MISMATCH") << std::right << std::setw(14) << std::fixed
                << std::setprecision(1) << us << std::setw(14) << std::scientific << std::setprecision(2)
                << worst.max_abs << std::setw(14) << worst.rel << "  " << against << std::defaultfloat << "\n";
    } catch (const Error& e) {
      all_ok = false;
      std::cout << std::setw(10) << "error" << "  " << e.what() << "\n";
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace

int cmd_run(const Args& args) {
  if (args.positional.size() > 1)
    throw InvalidArgument(str("[cli] run takes one model, got ", args.positional.size(), " paths"));
  std::string path = args.positional.empty() ? default_model() : args.positional[0];
  auto t_load = std::chrono::steady_clock::now();
  Model model = Model::load(path);
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  std::map<std::string, Tensor> inputs = model_inputs(model, path, args.all("--input"));
  std::vector<std::string> device_names = args.list("--device");
  if (device_names.empty()) device_names = {"cpu"};
  std::vector<Device> devices = parse_devices(device_names);
  if (devices.size() > 1 || device_names[0] == "all") return run_table(path, model, inputs, devices, args);

  SessionOptions options;
  options.device = devices[0];
  options.strict = args.has("--strict");
  options.precision = parse_precision(args.get("--precision", "f32"));
  const DType low = detail::low_precision_dtype(options.precision, options.device);
  if (std::string why = detail::low_precision_in_f32(low, options.device); !why.empty())
    std::cerr << "note: " << why << "\n";
  else if (std::string slow = detail::low_precision_not_fast(low, options.device); !slow.empty())
    std::cerr << "note: " << slow << "\n";
  options.profile = args.has("--profile");
  options.replay = !args.has("--no-replay");
  if (args.has("--profile-runs") && !options.profile) throw InvalidArgument("[cli] --profile-runs needs --profile");
  // Session creation as a user sees it: the model's load, the session and its plan for these
  // inputs (shape inference, placement, fusion, layouts, memory); then the first run, which also
  // allocates buffers, creates kernel primitives and reorders weights.
  auto t_create = std::chrono::steady_clock::now();
  Session session(model, options);
  session.plan(inputs);
  auto t_first = std::chrono::steady_clock::now();
  double create_ms = load_ms + std::chrono::duration<double, std::milli>(t_first - t_create).count();
  std::vector<Tensor> outputs = session.run(inputs);
  double first_run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_first).count();
  if (args.has("--output-dir")) {
    fs::path dir = args.get("--output-dir");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw InvalidArgument(str("[cli] cannot create output folder '", dir.string(), "': ", ec.message()));
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string name = model.outputs()[i].name;
      for (char& c : name)
        if (c == '/' || c == '\\') c = '_';
      write_npy((dir / (name + ".npy")).string(), outputs[i]);
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    std::cout << "output " << model.outputs()[i].name << ": " << dtype_name(outputs[i].dtype()) << " "
              << shape_str(outputs[i].shape()) << " on " << outputs[i].device().str() << "\n";
  std::cout << "create_ms=" << std::fixed << std::setprecision(1) << create_ms << " first_run_ms=" << first_run_ms
            << std::defaultfloat << "\n";
  if (args.has("--repeat")) {
    int n = args.get_int("--repeat", 10);
    const RunTimes t = run_times(session, inputs, std::max(1, n));
    std::cout << "median_us=" << std::fixed << std::setprecision(1) << t.median_us << " min_us=" << t.min_us
              << std::defaultfloat << "\n";
    if (options.device.type != DeviceType::cpu)
      std::cout << "replayed=" << (session.replayed()                   ? std::string("yes")
                                   : session.replay_blocker().empty() ? std::string("not yet")
                                                                      : str("no (", session.replay_blocker(), ")"))
                << "\n";
  }
  if (options.profile) {
    // Each node's median over the runs (their times vary by more than a node's gain).
    const int runs = args.get_int("--profile-runs", 1);
    if (runs < 1) throw InvalidArgument(str("[cli] --profile-runs should be at least 1, got ", runs));
    std::vector<std::vector<double>> times;
    std::vector<NodeProfile> profile;
    for (int r = 0; r < runs; ++r) {
      session.run(inputs);
      profile = session.profile();
      times.resize(profile.size());
      for (size_t i = 0; i < profile.size(); ++i) times[i].push_back(profile[i].time_us);
    }
    for (size_t i = 0; i < profile.size(); ++i) {
      std::vector<double>& t = times[i];
      std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
      profile[i].time_us = t[t.size() / 2];
    }
    if (runs == 1) std::cout << "profile (last run):\n";
    else std::cout << "profile (median of " << runs << " runs):\n";
    double total = 0;
    size_t name_width = 20, op_width = 10;
    for (auto& p : profile) {
      name_width = std::max(name_width, p.node.size() + 2);
      op_width = std::max(op_width, p.op.size() + 2);
    }
    std::map<std::string, std::pair<double, int>> by_op;  // op -> (time, steps)
    for (auto& p : profile) {
      std::cout << "  " << std::left << std::setw(static_cast<int>(name_width)) << p.node
                << std::setw(static_cast<int>(op_width)) << p.op << std::setw(10) << p.device.str() << std::right
                << std::fixed << std::setprecision(1) << std::setw(10) << p.time_us << " us"
                << (p.kernel.empty() ? "" : "  " + p.kernel) << "\n";
      total += p.time_us;
      by_op[p.op].first += p.time_us;
      ++by_op[p.op].second;
    }
    std::cout << "  total " << std::fixed << std::setprecision(1) << total << " us\n";
    std::vector<std::pair<std::string, std::pair<double, int>>> ops(by_op.begin(), by_op.end());
    std::sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.second.first > b.second.first; });
    std::cout << "by op:\n";
    for (auto& [op, v] : ops)
      std::cout << "  " << std::left << std::setw(static_cast<int>(op_width)) << op << std::right << std::setw(10)
                << v.first << " us " << std::setw(5) << std::setprecision(1) << (total > 0 ? 100.0 * v.first / total : 0.0)
                << "%  " << v.second << " step" << (v.second == 1 ? "" : "s") << "\n";
    for (auto& [dev, bytes] : session.peak_memory())
      std::cout << "peak_memory " << dev << " " << bytes << " bytes\n";
  }
  return 0;
}

}  // namespace porta::cli
