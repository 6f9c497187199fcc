// porta tests — the example models under models/<name>/ (written by scripts/export_models.py):
// locating them and reading their input/output listings.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "porta/tensor.hpp"

namespace porta::test {

/// One example model folder: model.onnx plus named .npy inputs and PyTorch's outputs.
struct ModelFixture {
  std::string name;
  std::string dir;
  std::vector<std::pair<std::string, std::string>> inputs;   ///< (ONNX input name, file path)
  std::vector<std::pair<std::string, std::string>> outputs;  ///< (ONNX output name, file path)
  std::string model_path() const { return dir + "/model.onnx"; }
};

/// The models folder: $PORTA_MODELS_DIR if set, else <source tree>/models.
std::string models_dir();
/// Names of the sub-folders of models_dir() that hold a model.onnx, sorted.
std::vector<std::string> list_models();
/// Reads models_dir()/<name>/{inputs,outputs}.txt; throws std::runtime_error naming the file
/// and line when a listing is missing or malformed.
ModelFixture load_fixture(const std::string& name);
/// `times` copies of a host tensor stacked along axis 0 (a batch of copies).
Tensor repeat_batch(const Tensor& t, int64_t times);
/// The same for model folders under `dir` (the real-model zoo lives in the build tree).
std::vector<std::string> list_models_in(const std::string& dir);
ModelFixture load_fixture_in(const std::string& dir, const std::string& name);

}  // namespace porta::test
