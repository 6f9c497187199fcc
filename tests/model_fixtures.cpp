#include "tests/model_fixtures.hpp"
#include "tests/test_paths.hpp"

#include <algorithm>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace porta::test {

std::string models_dir() {
  if (const char* e = std::getenv("PORTA_MODELS_DIR"); e && *e) return e;
  return std::string(PORTA_SOURCE_DIR) + "/models";
}

std::vector<std::string> list_models() { return list_models_in(models_dir()); }

std::vector<std::string> list_models_in(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx"))
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// Lines "<name> <file>"; file paths are made absolute against the model folder.
std::vector<std::pair<std::string, std::string>> read_listing(const std::string& dir,
                                                              const std::string& file) {
  std::string path = dir + "/" + file;
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.empty()) continue;
    std::istringstream words(line);
    std::string name, data, extra;
    if (!(words >> name >> data) || (words >> extra))
      throw std::runtime_error(path + ":" + std::to_string(n) + ": expected '<name> <file>', got '" +
                               line + "'");
    out.emplace_back(name, dir + "/" + data);
  }
  if (out.empty()) throw std::runtime_error(path + " lists nothing");
  return out;
}

}  // namespace

Tensor repeat_batch(const Tensor& t, int64_t times) {
  Tensor src = t.contiguous();
  Shape shape = src.shape();
  shape.at(0) *= times;
  Tensor out = Tensor::empty(shape, src.dtype());
  auto* dst = static_cast<char*>(out.raw_data());
  for (int64_t i = 0; i < times; ++i)
    std::memcpy(dst + i * src.nbytes(), src.raw_data(), src.nbytes());
  return out;
}

ModelFixture load_fixture(const std::string& name) { return load_fixture_in(models_dir(), name); }

ModelFixture load_fixture_in(const std::string& dir, const std::string& name) {
  ModelFixture f;
  f.name = name;
  f.dir = dir + "/" + name;
  f.inputs = read_listing(f.dir, "inputs.txt");
  f.outputs = read_listing(f.dir, "outputs.txt");
  return f;
}

}  // namespace porta::test
