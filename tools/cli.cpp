// porta CLI — argument parsing, model inputs, device lists.
#include "tools/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace fs = std::filesystem;

namespace porta::cli {

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  auto it = options.find(flag);
  return it == options.end() ? fallback : it->second;
}

std::vector<std::string> Args::all(const std::string& flag) const {
  std::vector<std::string> out;
  auto [b, e] = options.equal_range(flag);
  for (auto it = b; it != e; ++it) out.push_back(it->second);
  return out;
}

std::vector<std::string> Args::list(const std::string& flag) const {
  std::vector<std::string> out;
  for (auto& v : all(flag)) {
    std::stringstream ss(v);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) out.push_back(item);
  }
  return out;
}

int Args::get_int(const std::string& flag, int fallback) const {
  if (!has(flag)) return fallback;
  std::string v = get(flag);
  try {
    size_t pos = 0;
    int x = std::stoi(v, &pos);
    if (pos != v.size() || x < 0) throw 1;
    return x;
  } catch (...) {
    throw InvalidArgument(str("[cli] ", flag, " expects a non-negative integer, got '", v, "'"));
  }
}

Args parse(int argc, char** argv, int first, const std::vector<std::string>& valued,
           const std::vector<std::string>& switches) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s.rfind("--", 0) == 0 && s.size() > 2) {
      std::string flag = s, value;
      bool inline_value = false;
      if (auto eq = s.find('='); eq != std::string::npos) {
        flag = s.substr(0, eq);
        value = s.substr(eq + 1);
        inline_value = true;
      }
      if (std::find(valued.begin(), valued.end(), flag) != valued.end()) {
        if (!inline_value) {
          if (i + 1 >= argc) throw InvalidArgument(str("[cli] ", flag, " needs a value"));
          value = argv[++i];
        }
        a.options.emplace(flag, value);
      } else if (std::find(switches.begin(), switches.end(), flag) != switches.end()) {
        a.options.emplace(flag, "1");
      } else {
        std::string known;
        for (auto& v : valued) known += " " + v;
        for (auto& v : switches) known += " " + v;
        throw InvalidArgument(str("[cli] unknown option '", flag, "'; options here:", known));
      }
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

std::string models_dir() {
  if (const char* e = std::getenv("PORTA_MODELS_DIR")) return e;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p : {exe.parent_path() / "../share/porta/models", exe.parent_path() / "../../models"}) {
      if (fs::exists(p / "cnn" / "model.onnx", ec)) return fs::weakly_canonical(p, ec).string();
    }
  }
#ifdef PORTA_SOURCE_DIR
  return std::string(PORTA_SOURCE_DIR) + "/models";
#else
  return "models";
#endif
}

std::string default_model() { return models_dir() + "/cnn/model.onnx"; }

static std::map<std::string, std::string> read_listing(const fs::path& file) {
  std::map<std::string, std::string> out;
  std::ifstream f(file);
  std::string name, path;
  while (f >> name >> path) out[name] = (file.parent_path() / path).string();
  return out;
}

std::map<std::string, Tensor> model_inputs(const Model& model, const std::string& model_path,
                                           const std::vector<std::string>& input_flags) {
  std::map<std::string, Tensor> inputs;
  for (auto& flag : input_flags) {
    auto eq = flag.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InvalidArgument(str("[cli] --input expects NAME=FILE.npy, got '", flag, "'"));
    inputs[flag.substr(0, eq)] = read_npy(flag.substr(eq + 1));
  }
  if (!input_flags.empty()) return inputs;
  fs::path listing = fs::path(model_path).parent_path() / "inputs.txt";
  if (fs::exists(listing)) {
    for (auto& [name, file] : read_listing(listing)) inputs[name] = read_npy(file);
    return inputs;
  }
  std::mt19937 rng(12345);
  for (auto& d : model.inputs()) {
    Shape s = d.shape;
    for (auto& x : s)
      if (x < 0) x = 1;
    int64_t n = shape_numel(s);
    std::vector<double> v(static_cast<size_t>(n));
    if (d.dtype == DType::u8) {
      std::uniform_int_distribution<int> dist(0, 255);
      for (auto& x : v) x = dist(rng);
    } else if (!is_floating(d.dtype)) {
      std::uniform_int_distribution<int> dist(0, 1);
      for (auto& x : v) x = dist(rng);
    } else {
      std::normal_distribution<double> dist(0, 1);
      for (auto& x : v) x = dist(rng);
    }
    inputs[d.name] = Tensor::from_values(v, s, d.dtype);
  }
  return inputs;
}

std::map<std::string, Tensor> reference_outputs(const std::string& model_path) {
  std::map<std::string, Tensor> out;
  fs::path listing = fs::path(model_path).parent_path() / "outputs.txt";
  if (!fs::exists(listing)) return out;
  for (auto& [name, file] : read_listing(listing)) out[name] = read_npy(file);
  return out;
}

std::vector<Device> parse_devices(const std::vector<std::string>& names) {
  std::vector<Device> out;
  for (auto& n : names) {
    if (n == "all") {
      for (Device d : all_devices()) {
        Backend* b = find_backend(d.type);
        if (b && d.index < b->device_count() && b->availability(d.index).available) out.push_back(d);
      }
    } else {
      out.push_back(Device::parse(n));
    }
  }
  if (out.empty()) out.push_back(Device::cpu());
  return out;
}

}  // namespace porta::cli
