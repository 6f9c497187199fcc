// porta fuzz — ONNX model bytes: Model::from_bytes (protobuf parse, graph import, tensors
// inline and external, shape inference and the cpu compile done at load), then a cpu Session
// that runs the model when every input is small (compile per shapes, constant folding,
// kernels). Any porta::Error is an accepted outcome; anything else (a crash, a sanitizer
// report, a leak, another exception, an allocation past libFuzzer's limit) is a bug.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fuzz/fuzz_setup.hpp"
#include "porta/error.hpp"
#include "porta/session.hpp"

namespace {

std::string g_external_dir;

constexpr int64_t kMaxInputElements = 4096;

// Inputs of ones (a useful value for inputs that decide shapes or index), dynamic
// dimensions set to 1; false when an input has no rank or is too large to be cheap.
bool make_inputs(const porta::Model& model, std::map<std::string, porta::Tensor>& inputs) {
  for (const porta::ValueDesc& d : model.inputs()) {
    if (!d.rank_known || d.shape.size() > 8) return false;
    porta::Shape shape = d.shape;
    int64_t n = 1;
    for (int64_t& x : shape) {
      if (x < 0) x = 1;
      if (x > kMaxInputElements) return false;
      n *= x;
      if (n > kMaxInputElements) return false;
    }
    inputs[d.name] = porta::Tensor::from_values(std::vector<double>(static_cast<size_t>(n), 1.0), shape, d.dtype);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  porta::fuzz::limit_resources();
  g_external_dir = porta::fuzz::external_data_dir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    porta::Model model = porta::Model::from_bytes(data, size, g_external_dir);
    std::map<std::string, porta::Tensor> inputs;
    if (!make_inputs(model, inputs)) return 0;
    porta::Session session(model);
    for (const porta::Tensor& out : session.run(inputs)) porta::fuzz::check_accepted(out);
  } catch (const porta::Error& e) {
    // Refusing a malformed or unsupported model with a porta error is the expected outcome.
    porta::fuzz::note_refusal(e);
  }
  return 0;
}
